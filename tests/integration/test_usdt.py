"""USDT probes: a C program's own probes guarded by semaphores (tests/targets/usdt.c), and
CPython's gc__start..gc__done as the python pack's GC spans, against the programs' logs."""
import json
import os
import subprocess

from lib import (check_format, finish_tracer, load_trace, sigusr1, spans, start_tracer,
                 target, wait_exit, _procs)

import lib


def test_usdt_pair_with_semaphore_and_args(tmp):
    log = os.path.join(tmp, "usdt.log")
    p = subprocess.Popen([target("usdt"), "--wait-signal", "--steps", "200", "--log", log],
                         stdout=subprocess.PIPE, text=True)
    _procs.append(p)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", line
    pid = int(line[1])
    pack = os.path.join(tmp, "work.json")
    with open(pack, "w") as f:
        json.dump({"name": "work", "description": "test", "probes": [
            {"object": "usdt", "usdt": "tracer_test:work__start", "usdt_end": "work__done",
             "category": "operator", "args": {"id": "arg0", "size": "arg1"}}]}, f)
    out = os.path.join(tmp, "usdt.json")
    tr = start_tracer("-p", pid, "-P", pack, "-o", out)
    sigusr1(pid)
    wait_exit(p)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    calls = {}
    with open(log) as f:
        for l in f:
            i, s, e, sem = map(int, l.split())
            calls[i] = (s, e, sem)
    assert len(calls) == 200
    # the kernel raised the semaphore while the probe was attached: every step saw it
    assert all(sem for _, _, sem in calls.values())
    got = [e for e in spans(trace) if e["name"] == "tracer_test:work__start"]
    assert len(got) == 200, len(got)
    t0 = trace["metadata"]["t0_monotonic_ns"]
    span_ns = logged_ns = 0
    for e in got:
        # arguments decoded from their operands ("-8@%r12 8@%rax")
        i = e["args"]["id"]
        s, t, _ = calls[i]
        assert e["args"]["size"] == 1000 + i % 7
        assert e["cat"] == "operator" and e["tid"] == pid
        # the span lies inside the logged call
        start, end = t0 + round(e["ts"] * 1000), t0 + round((e["ts"] + e["dur"]) * 1000)
        assert s <= start and end <= t, (i, s, start, end, t)
        span_ns += end - start
        logged_ns += t - s
    # and covers nearly all of it: the probes are the first and last thing each step times
    assert span_ns >= 0.9 * logged_ns, (span_ns, logged_ns)


@lib.offline
def test_usdt_semaphore_zero_untraced(tmp):
    log = os.path.join(tmp, "usdt.log")
    subprocess.run([target("usdt"), "--steps", "5", "--log", log], check=True, timeout=30,
                   stdout=subprocess.DEVNULL)
    with open(log) as f:
        assert all(l.split()[3] == "0" for l in f)


def test_python_gc_spans(tmp):
    p = subprocess.Popen(["/usr/bin/python3", os.path.join(lib.ROOT, "tests", "targets",
                                                          "py_gc.py"),
                          "--wait-signal", "--seconds", "2"], stdout=subprocess.PIPE, text=True)
    _procs.append(p)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", line
    pid = int(line[1])
    out = os.path.join(tmp, "gc.json")
    tr = start_tracer("-p", pid, "-o", out)  # the python pack applies by itself
    sigusr1(pid)
    stdout, _ = p.communicate(timeout=60)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    assert "probe packs matching the target: python" in err, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    collects = [tuple(map(int, l.split()[1:])) for l in stdout.splitlines()
                if l.startswith("collect")]
    assert len(collects) >= 20
    t0 = trace["metadata"]["t0_monotonic_ns"]
    # the interpreter collects again as it exits, after the last logged call
    gcs = [e for e in spans(trace) if e["name"] == "Python GC" and
           t0 + e["ts"] * 1000 < collects[-1][1]]
    assert len(gcs) == len(collects), (len(gcs), len(collects))
    span_ns = logged_ns = 0
    for e, (s, t) in zip(sorted(gcs, key=lambda e: e["ts"]), collects):
        assert e["args"]["generation"] == 2  # gc.collect() collects the oldest generation
        assert e["args"]["py"] == "main"     # called from main(), at the gc.collect() line
        start, end = t0 + round(e["ts"] * 1000), t0 + round((e["ts"] + e["dur"]) * 1000)
        assert s <= start and end <= t       # each collection inside its logged call
        span_ns += end - start
        logged_ns += t - s
    # gc.collect() does a little more than the collection itself (and a busy machine may
    # preempt it outside): most of the logged time, not all
    assert span_ns >= 0.7 * logged_ns, (span_ns, logged_ns)


@lib.offline
def test_list_usdt(tmp):
    p = subprocess.run([lib.TRACER, "list", target("usdt"), "usdt:tracer_test:*"],
                       capture_output=True, text=True, timeout=30)
    out = p.stdout
    assert p.returncode == 0, p.stderr
    rows = [l.split() for l in out.splitlines() if "tracer_test:" in l]
    assert [r[1] for r in rows] == ["tracer_test:work__start", "tracer_test:work__done"], out
    assert all(r[2] == "yes" for r in rows)  # both guarded by a semaphore
    # two operands for the start (id, size), one for the end, as the compiler placed them
    assert len(rows[0]) == 5 and len(rows[1]) == 4, out
    assert all("@" in a for r in rows for a in r[3:]), out


def test_usdt_not_found_suggests_usdt_probes(tmp):
    """A USDT spec that matches nothing names the USDT probes near it, never a function: what is
    left of "usdt:*:*" once the globs are gone ("usdt::") must not suggest libc's ustat()."""
    p = subprocess.Popen([target("usdt"), "--wait-signal", "--steps", "1"],
                         stdout=subprocess.PIPE, text=True)
    _procs.append(p)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", line
    pid = line[1]
    rc, err = lib.run_tracer("-p", pid, "-u", "other:usdt:usdt:tracer_tst:work__start")
    assert rc == 1, err
    assert "no USDT probe matches 'tracer_tst:work__start'; did you mean: " \
        "tracer_test:work__start" in err, err
    rc, out, err = run_list(target("usdt"), "usdt:tracer_tst:work__start")
    assert rc == 1 and "did you mean: usdt:tracer_test:work__start" in err, err
    with open(f"/proc/{pid}/maps") as f:
        libc = next(l.split()[-1] for l in f if "/libc.so" in l)
    if run_list(libc, "usdt:*:*")[0] == 0:
        raise lib.Skip(f"{libc} has USDT probes")
    rc, err = lib.run_tracer("-p", pid, "-u", "other:libc.so*:usdt:*:*")
    assert rc == 1 and "no USDT probe matches '*:*'" in err and "ustat" not in err, err
    sigusr1(int(pid))
    wait_exit(p)


def run_list(*args):
    p = subprocess.run([lib.TRACER, "list", *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def test_more_usdt_probes_with_arguments_than_the_bpf_side_holds(tmp):
    """4,352 USDT sites with an argument, where the BPF side keeps 4,096 argument layouts: the
    probes past it are still recorded, without their argument, and one line says how many."""
    p, (pid,) = lib.start_ready([target("usdt_many"), "3"])
    pack = os.path.join(tmp, "many.json")
    with open(pack, "w") as f:
        json.dump({"name": "many", "description": "test", "probes": [
            {"object": "usdt_many", "usdt": "tracer_many:hit", "category": "operator",
             "args": {"i": "arg0"}}]}, f)
    out = os.path.join(tmp, "many.json.trace")
    tr = start_tracer("-p", pid, "-P", pack, "-o", out, "--max-overhead", "0")
    sigusr1(pid)
    wait_exit(p)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    assert "256 USDT probes recorded without their arguments: more with arguments than the " \
        "kernel side holds (4096)" in err, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    hits = [e for e in trace["traceEvents"] if e.get("name") == "tracer_many:hit"]
    # every site, every round: none dropped for want of room
    assert len(hits) == 3 * 4352, len(hits)
    with_arg = [e["args"]["i"] for e in hits if "i" in (e.get("args") or {})]
    assert len(with_arg) == 3 * 4096, len(with_arg)
    # each argument read is its own site's index
    assert sorted(set(with_arg)) == sorted(with_arg[:4096]) and len(set(with_arg)) == 4096
