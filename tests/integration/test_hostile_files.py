"""Files tracer did not write (issue 16): names with terminal escapes, NUL and invalid UTF-8,
times that are not times, pipes, corrupt gzip, packs nested too deep. report, export and merge
never print a control character, never write invalid JSON, never drop anything in silence; and
what they write is private (0600) like a recording."""
import csv
import gzip
import io
import json
import zlib
import os
import re
import resource
import stat
import subprocess
import threading
import time

import lib
import tracegen

ESC_NAME = "work\x1b[31mRED\x1b]0;pwned\x07\rer\x85"  # CSI, OSC, CR, C1 (NEL)


def hostile_trace(path):
    """Names a target could give its threads, times no reader can place, raw bytes no JSON
    string may hold; returns the number of events with bad times."""
    ev = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 1, "args": {"name": "app\x1b]2;t\x07"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": ESC_NAME}},
        {"ph": "X", "name": "dec\x00ode", "cat": "stage", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
        {"ph": "X", "name": "RAWBYTES", "cat": "stage", "pid": 1, "tid": 2, "ts": 20, "dur": 5,
         "args": {"v": "RAWCTRL"}},
        {"ph": "X", "name": "nan", "cat": "stage", "pid": 1, "tid": 2, "ts": 30, "dur": "NANX"},
        {"ph": "X", "name": "huge", "cat": "stage", "pid": 1, "tid": 2, "ts": 1e300, "dur": 5},
        {"ph": "X", "name": "negdur", "cat": "stage", "pid": 1, "tid": 2, "ts": 40, "dur": -5},
        {"ph": "X", "name": "fine", "cat": "stage", "pid": 1, "tid": 2, "ts": 50, "dur": 5},
    ]
    text = json.dumps({"traceEvents": ev}).encode()
    text = text.replace(b'"NANX"', b"NaN").replace(b"RAWBYTES", b"bad\xff\xfe\xc0utf")
    text = text.replace(b"RAWCTRL", b"a\x1b[2Jb\x01")
    with open(path, "wb") as f:
        f.write(text)
    return 3


def tracer(*args, **kw):
    return subprocess.run([lib.TRACER] + [str(a) for a in args], capture_output=True,
                          timeout=60, **kw)


# Raw bytes no output may hold (README, "Nothing raw"): C0 but the line end, DEL, C1, and the
# bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069)
HIDDEN_RE = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xd8\x9c|"
                       rb"\xe2\x80[\x8e\x8f\xaa-\xae]|\xe2\x81[\xa6-\xa9]")
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def assert_printable(out, what):
    bad = sorted({m.group() for m in HIDDEN_RE.finditer(out)})
    assert not bad, f"{what}: control characters from the file: {bad}"
    out.decode("utf-8")  # raises on invalid UTF-8


def strict_json(data):
    def no_constants(c):
        raise AssertionError(f"not JSON: {c}")
    return json.loads(data.decode("utf-8"), parse_constant=no_constants)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def merge_with_itself(src, out):
    """Merges src with itself into out; returns what a strict reader reads there."""
    p = tracer("merge", src, src, "-o", out)
    assert p.returncode == 0, p.stderr
    return strict_json(read(out))


@lib.offline
def test_names_never_raw(tmp):
    src = os.path.join(tmp, "hostile.json")
    hostile_trace(src)
    p = tracer("report", src)
    assert p.returncode == 0, p.stderr
    assert_printable(p.stdout, "report")
    assert_printable(p.stderr, "report's messages")
    assert "dec\ufffdode" in p.stdout.decode(), p.stdout  # a NUL does not cut the name
    assert "work\ufffd[31mRED" in p.stdout.decode(), p.stdout
    p = tracer("export", src, "--csv")
    assert p.returncode == 0, p.stderr
    assert_printable(p.stdout.replace(b"\n", b" "), "export --csv")
    rows = p.stdout.decode().splitlines()
    assert any(r.startswith('"dec\ufffdode"') for r in rows), rows
    assert any(r.startswith('"bad\ufffd\ufffd\ufffdutf"') for r in rows), rows
    p = tracer("export", src, "--jsonl")
    assert p.returncode == 0, p.stderr
    lines = [strict_json(l) for l in p.stdout.splitlines()]
    assert {l["name"] for l in lines} >= {"dec\x00ode", "bad\ufffd\ufffd\ufffdutf", "fine"}
    assert all(l["thread"] == "work\ufffd[31mRED\ufffd]0;pwned\ufffd\ufffder\ufffd"
               for l in lines), lines
    merged = merge_with_itself(src, os.path.join(tmp, "merged.json"))
    names = [e["name"] for e in merged["traceEvents"] if e.get("ph") == "X"]
    assert names.count("fine") == 2 and names.count("bad\ufffd\ufffd\ufffdutf") == 2, names
    assert any(e.get("args", {}).get("v") == "a\x1b[2Jb\x01" for e in merged["traceEvents"])


@lib.offline
def test_c1_del_bidi_never_raw(tmp):
    """U+009B (the C1 CSI), DEL and every bidirectional control (U+202E turns a line around) in
    names, categories, thread names and args: report (table, CSV, JSON, HTML) shows U+FFFD;
    export --jsonl and merge write them escaped (\\uXXXX), so the values read back the same."""
    name = "a\u009b2Jb\x7fc" + BIDI + "d"
    ev = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "t\u202eT"}},
          {"ph": "X", "name": name, "cat": "c\u009bat", "pid": 1, "tid": 2, "ts": 10, "dur": 5,
           "args": {"v": "v\u2066\x7f"}}]
    src = os.path.join(tmp, "hid\x1b[2Jden\u202e.json")  # its name is shown too
    with open(src, "wb") as f:  # raw UTF-8, not \\u escapes: what a careless writer leaves
        f.write(json.dumps({"traceEvents": ev}, ensure_ascii=False).encode())
    html = os.path.join(tmp, "r.html")
    for args in (["report", src], ["report", src, "--csv"], ["report", src, "--json"],
                 ["report", src, "--html", html], ["export", src, "--csv"], ["diff", src, src],
                 ["diff", src, src, "--json"], ["export", src, "--speedscope"]):
        p = tracer(*args)
        assert p.returncode == 0, (args, p.stderr)
        assert_printable(p.stdout.replace(b"\n", b" "), " ".join(args[:1] + args[2:]))
        assert_printable(p.stderr.replace(b"\n", b" "), args[0] + "'s messages")
        assert "a\ufffd2Jb\ufffdc" + "\ufffd" * len(BIDI) + "d" in p.stdout.decode(), args
    with open(html, "rb") as f:
        page = f.read()
    assert_printable(page.replace(b"\n", b" "), "report --html")
    assert "a\ufffd2Jb\ufffdc".encode() in page
    p = tracer("export", src, "--jsonl")
    assert p.returncode == 0, p.stderr
    assert_printable(p.stdout.replace(b"\n", b" "), "export --jsonl")
    assert_printable(p.stderr.replace(b"\n", b" "), "export's messages")
    row = strict_json(p.stdout)
    assert (row["name"], row["args"]["v"]) == (name, "v\u2066\x7f"), row
    out = os.path.join(tmp, "merged.json")
    p = tracer("merge", src, src, "-o", out)
    assert p.returncode == 0, p.stderr
    assert_printable(p.stderr.replace(b"\n", b" "), "merge's messages")
    with open(out, "rb") as f:
        text = f.read()
    assert_printable(text.replace(b"\n", b" "), "merge")
    spans = [e for e in strict_json(text)["traceEvents"] if e.get("ph") == "X"]
    assert [(e["name"], e["cat"]) for e in spans] == [(name, "c\u009bat")] * 2, spans


@lib.offline
def test_csv_formulas_are_text(tmp):
    """A cell a spreadsheet would run (=, +, -, @ first) gets a leading ' in export --csv and
    report --csv (OWASP's CSV injection advice); numbers, negative ones too, stay numbers."""
    formulas = ['=HYPERLINK("http://x.example/","y")', "+cmd|' /C calc'!A0", "@SUM(1)",
                "-2+3"]
    ev = [{"ph": "M", "name": "thread_name", "pid": -3, "tid": -4, "args": {"name": "=1+1"}}]
    ev += [{"ph": "X", "name": n, "cat": "-c", "pid": -3, "tid": -4, "ts": 10 + i, "dur": 1}
           for i, n in enumerate(formulas)]
    ev.append({"ph": "X", "name": "a=b", "cat": "ok", "pid": 1, "tid": 2, "ts": 20, "dur": 1})
    src = os.path.join(tmp, "formulas.json")
    with open(src, "w") as f:
        json.dump({"traceEvents": ev}, f)
    p = tracer("export", src, "--csv")
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout.decode())))
    assert [r["name"] for r in rows] == ["'" + n for n in formulas] + ["a=b"], rows
    assert {(r["category"], r["pid"], r["tid"], r["thread"]) for r in rows[:-1]} == \
        {("'-c", "-3", "-4", "'=1+1")}, rows
    assert rows[-1]["category"] == "ok"
    p = tracer("report", src, "--csv")
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout.decode())))
    assert sorted(r["group"] for r in rows) == sorted(["'" + n for n in formulas] + ["a=b"])
    assert all(int(r["count"]) == 1 and int(r["total_ns"]) == 1000 for r in rows), rows


@lib.offline
def test_bad_times_counted(tmp):
    """NaN, huge, a negative dur: left out of report, export and merge, and each says so."""
    src = os.path.join(tmp, "hostile.json")
    bad = hostile_trace(src)
    want = f"hostile.json: {bad} events left out: a ts or dur that is not a time"
    for args in (["report", src], ["export", src, "--csv"],
                 ["merge", src, "-o", os.path.join(tmp, "m.json")]):
        p = tracer(*args)
        assert p.returncode == 0, (args, p.stderr)
        assert want in p.stderr.decode(), (args, p.stderr)
    with open(os.path.join(tmp, "m.json"), "rb") as f:
        merged = strict_json(f.read())
    names = {e["name"] for e in merged["traceEvents"] if e.get("ph") == "X"}
    assert not names & {"nan", "huge", "negdur"} and "fine" in names, names


@lib.offline
def test_pipes_read_as_streams(tmp):
    """report reads its input twice: a pipe or a FIFO is spooled once, never re-read."""
    golden = os.path.join(lib.ROOT, "tests", "golden", "pipeline.json")
    with open(golden, "rb") as f:
        data = f.read()
    want = tracer("report", golden).stdout.replace(golden.encode(), b"IN")
    p = tracer("report", "/dev/stdin", input=gzip.compress(data))
    assert p.returncode == 0, p.stderr
    assert p.stdout.replace(b"/dev/stdin", b"IN") == want
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(data)
    t = threading.Thread(target=feed)
    t.start()
    p = tracer("report", fifo)  # a second open of the FIFO would block: the timeout fails it
    t.join()
    assert p.returncode == 0, p.stderr
    assert p.stdout.replace(fifo.encode(), b"IN") == want
    p = tracer("export", "/dev/stdin", "--csv", input=data)
    assert p.returncode == 0 and p.stdout.count(b"\n") == 145, p.stderr


@lib.offline
def test_corrupt_input_says_what(tmp):
    cut = os.path.join(tmp, "cut.json.gz")
    with open(cut, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03")  # a gzip header, then nothing
    p = tracer("report", cut)
    assert p.returncode == 1, p.stderr
    assert p.stderr.decode().strip() == f"tracer: {cut}:1: a gzip file cut short before its " \
        "first byte of data", p.stderr
    packs = os.path.join(tmp, "packs")
    os.mkdir(packs)
    with open(os.path.join(packs, "deep.json"), "w") as f:
        f.write('{"name": "deep", "probes": ' + "[" * 2000 + "]" * 2000 + "}\n")
    p = tracer("packs", env=dict(os.environ, TRACER_PROBES=packs))
    assert "deep.json:1: nested deeper than 1000 levels" in p.stderr.decode(), p.stderr


@lib.offline
def test_outputs_are_private(tmp):
    """export, merge and --html write what the recording holds (captured arguments): 0600."""
    golden = os.path.join(lib.ROOT, "tests", "golden", "pipeline.json")
    outs = {"csv": os.path.join(tmp, "t.csv"), "merge": os.path.join(tmp, "m.json.gz"),
            "html": os.path.join(tmp, "r.html")}
    old = os.umask(0o022)
    try:
        for args in (["export", golden, "--csv", "-o", outs["csv"]],
                     ["merge", golden, golden, "-o", outs["merge"]],
                     ["report", golden, "--html", outs["html"]]):
            p = tracer(*args)
            assert p.returncode == 0, (args, p.stderr)
    finally:
        os.umask(old)
    for what, path in outs.items():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, (what, oct(os.stat(path).st_mode))
    with open(outs["html"]) as f:
        assert f.read().lstrip().startswith("<!DOCTYPE html>")


@lib.offline
def test_repair_never_loses_a_file(tmp):
    """A complete file (a merge's) is left byte for byte; a cut one is repaired under its name
    with the original kept beside it (FILE.cut); a 200 MB cut trace in bounded memory."""
    golden = os.path.join(lib.ROOT, "tests", "golden")
    merged = os.path.join(tmp, "merged.json")
    p = tracer("merge", os.path.join(golden, "host-a.json"), os.path.join(golden, "host-b.json"),
               "-o", merged)
    assert p.returncode == 0, p.stderr
    with open(merged, "rb") as f:
        whole = f.read()
    p = tracer("repair", merged)
    assert p.returncode == 0 and b"complete trace: nothing to repair" in p.stderr, p.stderr
    with open(merged, "rb") as f:
        assert f.read() == whole
    assert not os.path.exists(merged + ".cut")
    # cut inside an event: the complete lines are kept, the original stays as it was
    cut = whole[:len(whole) * 2 // 3]
    with open(merged, "wb") as f:
        f.write(cut)
    p = tracer("repair", merged)
    assert p.returncode == 0 and f"the file as it was is {merged}.cut".encode() in p.stderr, \
        p.stderr
    with open(merged + ".cut", "rb") as f:
        assert f.read() == cut
    with open(merged, "rb") as f:
        repaired = strict_json(f.read())
    lines = [l for l in cut.split(b"\n")[1:] if l.endswith(b"},")]
    assert len(repaired["traceEvents"]) == len(lines) + 1 and repaired["metadata"]["repaired"]
    p = tracer("repair", merged)  # the .cut of the first repair is never overwritten
    assert p.returncode == 0 and b"nothing to repair" in p.stderr, p.stderr
    # bounded memory: a 200 MB trace cut short
    big = os.path.join(tmp, "big.json")
    tracegen.generate(big, 200 << 20, seed=5)
    with open(big, "r+b") as f:
        f.truncate(os.path.getsize(big) * 3 // 4)
    rss_file = os.path.join(tmp, "rss")
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file, lib.TRACER, "repair", big],
                       capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    with open(rss_file) as f:
        rss_kb = int(f.read().split()[-1])
    assert rss_kb < 50 * 1024, f"peak RSS {rss_kb} KB"
    with open(big, "rb") as f:
        assert f.read()[-200:].rstrip().endswith(b"}}")


def test_repair_gz(tmp):
    """A .gz recording cut short (its gzip stream ends mid-block) is repaired into a .gz that
    gunzip reads whole: every complete event line that could be decompressed, then the end;
    the original is kept as FILE.cut."""
    plain = os.path.join(tmp, "run.json")
    tracegen.generate(plain, 2 << 20, seed=7)
    with open(plain, "rb") as f:
        whole = f.read()
    packed = gzip.compress(whole)
    path = os.path.join(tmp, "run.json.gz")
    with open(path, "wb") as f:
        f.write(packed[:len(packed) // 2])
    p = tracer("repair", path)
    assert p.returncode == 0 and f"the file as it was is {path}.cut".encode() in p.stderr, \
        p.stderr
    with open(path + ".cut", "rb") as f:
        assert f.read() == packed[:len(packed) // 2]
    with gzip.open(path, "rb") as f:
        repaired = strict_json(f.read())
    # what the cut stream still holds: a prefix of the trace, its last line incomplete
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    prefix = d.decompress(packed[:len(packed) // 2])
    assert whole.startswith(prefix) and 0 < len(prefix) < len(whole)
    lines = [l for l in prefix.split(b"\n")[1:] if l.endswith(b"},")]
    assert len(repaired["traceEvents"]) == len(lines) + 1 and repaired["metadata"]["repaired"]
    p = tracer("report", path)
    assert p.returncode == 0 and b"bottleneck:" in p.stdout, p.stderr
    p = tracer("repair", path)
    assert p.returncode == 0 and b"nothing to repair" in p.stderr, p.stderr


@lib.offline
def test_merge_escaped_names_then_a_long_event(tmp):
    """Issue 25: names whose bytes need escaping (90 NULs, 200 x 0xff) grew the rewritten event
    past the buffer merge had allocated, and the 3 KB event after it wrote out of bounds
    (SIGSEGV, ASan heap-buffer-overflow in buf_add, a .tmp file left behind)."""
    src = os.path.join(tmp, "escapes.json")
    name = b"a" + b"\x00" * 90 + b"\xff" * 200
    write(src, b'{"traceEvents":[\n'
          b'{"ph":"X","name":"' + name + b'","ts":1,"dur":2,"pid":1,"tid":1},\n'
          b'{"ph":"X","name":"' + b"x" * 3000 + b'","ts":3,"dur":2,"pid":1,"tid":1}\n'
          b'],"metadata":{}}')
    merged = merge_with_itself(src, os.path.join(tmp, "m.json"))
    names = [e["name"] for e in merged["traceEvents"] if e.get("ph") == "X"]
    assert names.count("a" + "\x00" * 90 + "\ufffd" * 200) == 2 and names.count("x" * 3000) == 2
    assert sorted(os.listdir(tmp)) == ["escapes.json", "m.json"]


@lib.offline
def test_merge_many_pipes(tmp):
    """Nine pipes merge (each is spooled once: there was room for eight, then "Too many open
    files"); more inputs than the open-file limit allows are refused in one line that says
    what to do."""
    golden = os.path.join(lib.ROOT, "tests", "golden", "pipeline.json")
    fifos = [os.path.join(tmp, f"in{i}") for i in range(9)]
    for path in fifos:
        os.mkfifo(path)
    feeders = [threading.Thread(target=write, args=(path, read(golden)), daemon=True)
               for path in fifos]
    for t in feeders:
        t.start()
    out = os.path.join(tmp, "m.json")
    p = tracer("merge", *fifos, "-o", out)
    for t in feeders:
        t.join(timeout=5)
    assert p.returncode == 0, p.stderr
    assert len(strict_json(read(out))["metadata"]["merge"]["inputs"]) == 9
    # an open-file limit too low for the inputs: one line, nothing written
    low = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
    p = tracer("merge", *([golden] * 9), "-o", out + "2", preexec_fn=low)
    assert p.returncode == 1 and not os.path.exists(out + "2"), p.stderr
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1 and "merging 9 files needs" in lines[0] and "ulimit -n" in lines[0], \
        lines


def other_users_file(path):
    write(path, b"someone else's\n")
    os.chown(path, 65534, 65534)


def writers():
    """Every offline writer: (what, its arguments before the file it writes). repair writes
    the file it is given, which the tests make a copy of a cut recording."""
    golden = os.path.join(lib.ROOT, "tests", "golden")
    pipeline = os.path.join(golden, "pipeline.json")
    return [("export", ["export", pipeline, "--csv", "-o"]),
            ("merge", ["merge", pipeline, os.path.join(golden, "host-b.json"), "-o"]),
            ("html", ["report", pipeline, "--html"]),
            ("speedscope", ["export", pipeline, "--speedscope", "-o"]),
            ("diff-html", ["diff", pipeline, pipeline, "--html"]),
            ("repair", ["repair"])]


def cut_copy(path):
    write(path, read(os.path.join(lib.ROOT, "tests", "golden", "cut.json")))


def without_sudo():
    return {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}


def need_root():
    if os.geteuid() != 0:
        raise lib.Skip("needs root: files of another user")


@lib.offline
def test_offline_outputs_one_policy(tmp):
    """export -o, merge -o, report --html and repair follow the recording's rules: never
    through a symbolic link, never over another user's file (as root without sudo too); the
    refusal is one line and the files stay as they were."""
    need_root()
    victim = os.path.join(tmp, "victim")
    for what, args in writers():
        if what == "repair":
            cut_copy(victim)
        else:
            write(victim, b"precious\n")
        precious = read(victim)
        link = os.path.join(tmp, f"{what}.link")
        os.symlink(victim, link)
        p = tracer(*args, link, env=without_sudo())
        assert p.returncode == 1, (what, p.stderr)
        assert f"{link} is a symbolic link; not writing through it".encode() in p.stderr, \
            (what, p.stderr)
        assert os.path.islink(link) and read(victim) == precious, what
        other = os.path.join(tmp, f"{what}.other")
        if what == "repair":
            cut_copy(other)
            os.chown(other, 65534, 65534)
        else:
            other_users_file(other)
        before = read(other)
        p = tracer(*args, other, env=without_sudo())
        assert p.returncode == 1, (what, p.stderr)
        assert b"belongs to another user (uid 65534)" in p.stderr and \
            len(p.stderr.splitlines()) == 1, (what, p.stderr)
        st = os.stat(other)
        assert read(other) == before and st.st_uid == 65534, what
    assert not [n for n in os.listdir(tmp) if ".tmp" in n], os.listdir(tmp)


@lib.offline
def test_offline_outputs_fresh_temporary_names(tmp):
    """The file being written sits under a name nobody could prepare: with FILE.tmpPID (the
    old name) planted as a link to a victim for the pids tracer may get, every writer still
    writes its own file and the victim stays as it was."""
    need_root()
    victim = os.path.join(tmp, "victim")
    write(victim, b"precious\n")
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    for what, args in writers():
        out = os.path.join(tmp, f"{what}.out")
        if what == "repair":
            cut_copy(out)
        with open("/proc/sys/kernel/ns_last_pid") as f:
            first = int(f.read()) + 1000
        if first + 200 >= pid_max:
            first = 1000
        planted = [f"{out}.tmp{pid}" for pid in range(first, first + 200)]
        for name in planted:
            os.symlink(victim, name)
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(first - 1))
        p = subprocess.Popen([lib.TRACER] + args + [out], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=without_sudo())
        _, err = p.communicate(timeout=60)
        if not first <= p.pid < first + 200:
            raise lib.Skip(f"tracer did not get a pid in {first}..{first + 199} (got {p.pid})")
        assert p.returncode == 0, (what, err)
        assert read(victim) == b"precious\n", (what, err)
        assert not os.path.islink(out) and os.path.getsize(out) > 0, what
        for name in planted:
            os.unlink(name)
        assert not [n for n in os.listdir(tmp) if ".tmp" in n], os.listdir(tmp)


@lib.offline
def test_offline_output_killed_leaves_nothing(tmp):
    """The output has no name until it is complete (O_TMPFILE): a merge killed while it writes
    leaves the folder as it was (FILE.tmpPID stayed behind before)."""
    big = os.path.join(tmp, "big.json")
    tracegen.generate(big, 50 << 20, seed=11)
    p = subprocess.Popen([lib.TRACER, "merge", big, big, "-o", os.path.join(tmp, "m.json")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def writing():
        """A descriptor open on a file of tmp other than the input: the output."""
        for fd in os.listdir(f"/proc/{p.pid}/fd"):
            try:
                target = os.readlink(f"/proc/{p.pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith(tmp + "/") and target != big:
                return True
        return False
    while p.poll() is None and not writing():
        time.sleep(0.01)
    assert p.poll() is None, "the merge ended before it was seen writing"
    p.kill()
    p.wait()
    assert os.listdir(tmp) == ["big.json"], os.listdir(tmp)


@lib.offline
def test_offline_outputs_belong_to_the_sudo_user(tmp):
    """Under sudo, what export, merge, report --html and repair write is the invoking user's
    (SUDO_UID/SUDO_GID), mode 0600, as a recording is; repair leaves the user's file theirs."""
    need_root()
    env = dict(without_sudo(), SUDO_UID="65534", SUDO_GID="65534")
    for what, args in writers():
        out = os.path.join(tmp, f"{what}.out")
        if what == "repair":
            cut_copy(out)
            os.chown(out, 65534, 65534)
        p = tracer(*args, out, env=env)
        assert p.returncode == 0, (what, p.stderr)
        st = os.stat(out)
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o600), \
            (what, st.st_uid, st.st_gid, oct(st.st_mode))


@lib.offline
def test_repair_writes_valid_json(tmp):
    """Lines that look like events but are not JSON (a missing colon, a bare word, raw control
    bytes, invalid UTF-8, an empty args object with a space) are left out and counted: the
    repaired file is valid JSON that a strict reader parses."""
    path = os.path.join(tmp, "bad.json")
    write(path, b'{"traceEvents":[\n'
          b'{"ph":"i","name":"recording started","pid":0,"tid":0,"ts":0,"args":{ }},\n'
          b'{"ph":"X","name":"a" "ts":1},\n'
          b'{"ph":"X","name":"ok","ts":2,"dur":1,"pid":1,"tid":1},\n'
          b'{x},\n'
          b'{"ph":"X","name":"\x01\xff","ts":2,"dur":1,"pid":1,"tid":1},\n'
          b'{"ph":"X","name":"ok2","ts":3,"dur":1,"pid":1,"tid":1},\n'
          b'{"ph":"X","na')
    p = tracer("repair", path)
    assert p.returncode == 0, p.stderr
    repaired = strict_json(read(path))
    assert b"kept 3 events, left out 3 lines that were not complete events" in p.stderr, \
        p.stderr
    names = [e["name"] for e in repaired["traceEvents"]]
    assert names == ["recording started", "ok", "ok2", "recording stopped"], names
