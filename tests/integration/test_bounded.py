"""Offline commands in bounded memory, disk and time whatever their input holds: a report over
hundreds of thousands of span names or threads, a repair of a file with a line of a gigabyte, a
report reading a pipe that never ends. The inputs are generated here, at run time.
"""
import json
import os
import re
import subprocess

import lib


def measured(tmp, *args, stdin=None, timeout=60):
    """Runs tracer under GNU time; returns (returncode, stdout, stderr, peak RSS in MB). GNU time
    measures its own child: a child of this Python process would count Python's pages too."""
    rss_file = os.path.join(tmp, "rss")
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file, lib.TRACER] +
                       [str(a) for a in args], stdin=stdin, capture_output=True, text=True,
                       timeout=timeout)
    with open(rss_file) as f:
        rss_kb = int(f.read().split()[-1])
    return p.returncode, p.stdout, p.stderr, rss_kb / 1024


def write_trace(path, lines):
    with open(path, "w") as f:
        f.write('{"traceEvents":[\n')
        for line in lines:
            f.write(line + ",\n")
        f.write('{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}}\n]}\n')


@lib.offline
def test_report_many_names(tmp):
    """200,000 distinct span names (each sketch held its 2,304 buckets: 3.7 GB) in well under
    300 MB, every name's statistics still there."""
    n = 200000
    path = os.path.join(tmp, "names.json")
    write_trace(path, ('{"ph":"X","name":"name-%d","cat":"app","ts":%d,"dur":%d,"pid":1,'
                       '"tid":1}' % (i, i * 10, 1 + i % 7) for i in range(n)))
    rc, out, err, rss = measured(tmp, "report", path, "--json")
    assert rc == 0, err
    groups = {g["group"]: g for g in json.loads(out)["groups"]}
    assert len(groups) == n
    for i in (0, 6, 99999, n - 1):
        g = groups["name-%d" % i]
        assert g["count"] == 1 and g["min_ns"] == g["max_ns"] == g["p50_ns"] == (1 + i % 7) * 1000
    assert rss < 300, f"peak RSS {rss:.0f} MB for {n} names"


@lib.offline
def test_report_many_threads(tmp):
    """50,000 threads, each a process of its own and so a stage of its own (the stages were
    named and grouped comparing every thread with every other: 106 s): the table shows the
    busiest stages and says how many more there are; --json lists every one."""
    n = 50000
    path = os.path.join(tmp, "threads.json")

    def lines():
        for i in range(n):
            pid = 100 + i
            yield ('{"ph":"M","name":"thread_name","pid":%d,"tid":%d,"args":{"name":"worker-%d"}}'
                   % (pid, pid, i))
            # busy 1..99% of its time: from its first span to its last
            yield '{"ph":"X","name":"w","cat":"app","ts":0,"dur":%d,"pid":%d,"tid":%d}' % (
                1 + i % 99, pid, pid)
            yield '{"ph":"X","name":"w","cat":"app","ts":99,"dur":1,"pid":%d,"tid":%d}' % (pid, pid)
    write_trace(path, lines())
    rc, out, err, _ = measured(tmp, "report", path, timeout=30)
    assert rc == 0, err
    table = out[out.index("\nSTAGE "):]
    rows = [l for l in table.splitlines()[1:] if l.startswith("worker[*] pid ")]
    assert 10 <= len(rows) <= 100, table[:2000]
    more = re.search(r"\.\.\. and (\d+) more stages of (\d+) threads", table)
    assert more, table[:2000]
    assert int(more.group(1)) + len(rows) == n + 1  # and main's
    rc, out, err, _ = measured(tmp, "report", path, "--json", timeout=30)
    assert rc == 0, err
    stages = json.loads(out)["stages"]
    assert sorted(s["stage"] for s in stages if s["stage"] != "main") == sorted(
        "worker[*] pid %d" % (100 + i) for i in range(n))
    assert all(s["threads"] == 1 for s in stages)


@lib.offline
def test_report_pipe_spool_bounded(tmp):
    """A pipe is copied to TMPDIR to be read twice: one that never ends stops at a bound (half
    the free space, TRACER_SPOOL_MAX here) with one line saying so, and /dev/zero at once (it
    spooled until the disk was full)."""
    env = dict(os.environ, TRACER_SPOOL_MAX="64M", TMPDIR=tmp)
    # whitespace: what a trace may start with, so only the bound stops it
    p = subprocess.run("head -c 300M /dev/zero | tr '\\0' ' ' | %s report /dev/stdin" % lib.TRACER,
                       shell=True, capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "more than 0.1 GB from a pipe" in lines[0] and \
        "save it to a file" in lines[0], p.stderr
    p = subprocess.run([lib.TRACER, "report", "/dev/zero"], capture_output=True, text=True,
                       env=env, timeout=30)
    assert p.returncode != 0
    assert p.stderr.strip() == "tracer: /dev/zero: not a trace: it starts with neither JSON " \
        "nor gzip; give a file that tracer or a Chrome trace writer wrote", p.stderr


@lib.offline
def test_repair_long_line_bounded(tmp):
    """A cut trace with a line of 400 MB (repair read every line whole: a 1 GiB line took
    1.06 GB): repaired in bounded memory, the long line left out and said, every complete
    event line around it kept."""
    path = os.path.join(tmp, "cut.json")
    event = '{"ph":"X","name":"e%d","cat":"app","ts":%d.000,"dur":1.000,"pid":1,"tid":1},\n'
    with open(path, "w") as f:
        f.write('{"traceEvents":[\n')
        for i in range(3):
            f.write(event % (i, i))
        f.write('{"ph":"i","name":"long","ts":5.000,"pid":1,"tid":1,"args":{"s":"')
        chunk = "x" * (1 << 20)
        for _ in range(400):
            f.write(chunk)
        f.write('"}},\n')
        for i in range(3, 6):
            f.write(event % (i, i))
        f.write('{"ph":"X","name":"cut')
    rc, _, err, rss = measured(tmp, "repair", path)
    assert rc == 0, err
    # 73 MB; 232 MB under ASan (its shadow, and its quarantine of the buffers outgrown)
    assert rss < 300, f"peak RSS {rss:.0f} MB"
    assert "1 line longer than 64 MB left out" in err, err
    os.unlink(path + ".cut")
    with open(path) as f:
        repaired = json.load(f)
    names = [e["name"] for e in repaired["traceEvents"]]
    assert names == ["e%d" % i for i in range(6)] + ["recording stopped"], names
    assert repaired["metadata"]["events_kept"] == 6


def table_rows(text, header):
    """The rows of the summary's table under the line starting with header, up to a blank line."""
    block = text[text.index("\n" + header) + 1:].split("\n\n")[0]
    return block.splitlines()[1:]


def test_summary_rows_bounded(tmp):
    """--follow over 60 short-lived processes, each its own stage ("spawner pid N"): the
    recording summary shows the 40 busiest stages and the 40 processes with the most spans,
    and one line each says how many more there are (a churn of 1,400 threads a second printed
    27,383 stage rows)."""
    out = os.path.join(tmp, "f.json")
    loop = "for i in $(seq 60); do %s work 3; done" % lib.target("spawner")
    p = subprocess.run([lib.TRACER, "--follow", "-u", "other:spawner:work", "-o", out, "--",
                        "sh", "-c", loop], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    with open(out) as f:
        pids = {e["pid"] for e in json.load(f)["traceEvents"]
                if e.get("ph") == "X" and e.get("name") == "work"}
    assert len(pids) == 60
    for header, what in (("PROCESS ", "processes"), ("STAGE ", "stages")):
        rows = table_rows(p.stderr, header)
        more = re.match(r"\.\.\. and (\d+) more %s of (\d+) threads" % what, rows[-1])
        assert more and len(rows) == 41, rows[-3:]
        assert int(more.group(1)) + 40 >= 60, rows[-1]


@lib.offline
def test_report_folds_names_past_the_bound(tmp):
    """Past REPORT_MAX_GROUPS distinct names (a million; 1,000 here) the spans of new names are
    counted in one row, "(other names)", and the output says how many were."""
    n, bound = 5000, 1000
    path = os.path.join(tmp, "names.json")
    write_trace(path, ('{"ph":"X","name":"name-%d","cat":"app","ts":%d,"dur":%d,"pid":1,'
                       '"tid":1}' % (i, i * 10, 1 + i % 7) for i in range(n)))
    env = {"TRACER_REPORT_MAX_GROUPS": str(bound)}
    r = json.loads(subprocess.run([lib.TRACER, "report", path, "--json"], capture_output=True,
                                  text=True, env=dict(os.environ, **env), check=True).stdout)
    groups = {g["group"]: g for g in r["groups"]}
    assert len(groups) == bound + 1 and r["folded_spans"] == n - bound
    assert all("name-%d" % i in groups for i in range(bound))
    other = groups["(other names)"]
    assert other["count"] == n - bound and other["min_ns"] == 1000 and other["max_ns"] == 7000
    text = subprocess.run([lib.TRACER, "report", path], capture_output=True, text=True,
                          env=dict(os.environ, **env), check=True).stdout
    assert '(%d spans of names past the first %d are counted in "(other names)")' % (
        n - bound, bound) in text, text
