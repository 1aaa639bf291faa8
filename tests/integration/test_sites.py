"""Moved probe sites (userspace/elf/site.h): functions whose first instructions the kernel
single-steps are probed past them where that is provably safe, and the spans stay exact."""
import collections
import json
import os
import re
import subprocess

import lib
from lib import check_format, load_trace, spans, target

FUNCS = ("endbr_push", "test_jcc", "loop_head", "sub_rsp", "set_arg", "cet_work")


def prologues_pack(tmp, set_arg_args):
    probes = [{"object": "prologues", "function": f, "category": "other"} for f in FUNCS]
    if set_arg_args:
        probes[FUNCS.index("set_arg")]["args"] = {"x": "arg0"}
    path = os.path.join(tmp, "prologues.json")
    with open(path, "w") as f:
        json.dump({"name": "prologues", "probes": probes}, f)
    return path


def run_prologues(tmp, calls, set_arg_args):
    out = os.path.join(tmp, "prologues-out.json")
    rc, err = lib.run_tracer("-P", prologues_pack(tmp, set_arg_args), "-o", out, "--",
                             target("prologues"), calls)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    return trace, err


def test_moved_sites_exact(tmp):
    """tests/targets/prologues.c: each function's calls are spans, one per call, early returns
    included; the sites move past endbr64, test and the rest only where nothing can jump into
    the skipped bytes, rsp is unchanged and the arguments read are intact."""
    calls = 3000
    trace, err = run_prologues(tmp, calls, set_arg_args=True)
    c = trace["metadata"]["counts"]
    assert c["unmatched_returns"] == 0 and c["incomplete_no_return"] == 0, c
    got = collections.Counter(e["name"] for e in spans(trace))
    assert got == {f: calls for f in FUNCS}, got
    sites = {p["function"]: p.get("site_offset", p["offset"]) - p["offset"]
             for p in trace["metadata"]["probes"]}
    assert sites == {"endbr_push": 4, "test_jcc": 2, "loop_head": 0, "sub_rsp": 0, "set_arg": 0,
                     "cet_work": sites["cet_work"]}, sites
    assert sites["cet_work"] > 0  # the C function built with -fcf-protection=full
    # set_arg overwrites %edi before its push: read at its first instruction, arg0 is the
    # caller's (0, 1, 2 in turn), not the 7 it sets
    xs = collections.Counter(e["args"]["x"] for e in spans(trace) if e["name"] == "set_arg")
    assert xs == {0: calls // 3, 1: calls // 3, 2: calls // 3}, xs
    # the overhead accounting sees the moved sites as emulated
    hits = trace["metadata"]["overhead"]["entry_hits"]
    assert hits["single-stepped"] == 3 * calls and hits["emulated"] == 3 * calls, hits
    # with no argument read, set_arg's site moves past the mov too
    trace, err = run_prologues(tmp, calls, set_arg_args=False)
    moved = {p["function"]: p.get("site_past") for p in trace["metadata"]["probes"]}
    assert moved["set_arg"] == "endbr64; mov", moved
    got = collections.Counter(e["name"] for e in spans(trace))
    assert got["set_arg"] == calls, got


def test_list_shows_sites(tmp):
    """tracer list: the site and its cost, what it moved past, or why it stays."""
    p = subprocess.run([lib.TRACER, "list", target("prologues")], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    rows = {f: l for l in p.stdout.splitlines() for f in FUNCS
            if re.search(rf"  {f}(  |$)", l)}
    assert "emulated +4" in rows["endbr_push"] and "(past endbr64)" in rows["endbr_push"]
    assert "emulated +2" in rows["test_jcc"] and "0.7us" in rows["test_jcc"]
    assert "single-stepped" in rows["sub_rsp"] and "(stays: rsp changes first)" in rows["sub_rsp"]
    assert "(stays: a branch in it lands in the skipped bytes)" in rows["loop_head"]


LIBC_MOVED = ("free", "read", "write", "close", "fstat", "pthread_mutex_lock",
              "pthread_mutex_unlock", "strtol", "qsort", "clock_gettime")


def test_moved_libc_sites_on_a_real_program(tmp):
    """Debian's libc under a real program (Python reading files, threads, printing): functions
    it calls all the time whose probes move past their first instructions (free, read,
    pthread_mutex_lock, ...). It runs to the end with the right output, every return matched,
    and each worker thread's 2000 file reads are its read spans."""
    out = os.path.join(tmp, "libc.json")
    script = ("import json, threading, sys\n"
              "def work(n):\n"
              "    for i in range(n):\n"
              "        d = json.loads(json.dumps({'k': [str(i)] * 50}))\n"
              "        open(sys.executable, 'rb').read(4096)\n"
              "ts = [threading.Thread(target=work, args=(2000,)) for _ in range(3)]\n"
              "[t.start() for t in ts]\n"
              "[t.join() for t in ts]\n"
              "print('done', sum(len(str(i)) for i in range(1000)))\n")
    want = subprocess.run(["/usr/bin/python3", "-c", script], capture_output=True,
                          text=True).stdout
    specs = [a for f in LIBC_MOVED for a in ("-u", f"other:libc.so.6:{f}")]
    p = subprocess.run([lib.TRACER, *specs, "--no-python", "-o", out, "--", "/usr/bin/python3",
                        "-c", script], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout == want, (p.stdout, want)
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    c = trace["metadata"]["counts"]
    assert c["unmatched_returns"] == 0 and c["incomplete_no_return"] == 0, c
    moved = {pr["function"] for pr in trace["metadata"]["probes"] if "site_offset" in pr}
    assert moved >= {"free", "read", "pthread_mutex_lock"}, moved
    by = collections.Counter(e["name"] for e in spans(trace))
    assert by["free"] > 10000 and by["read"] > 6000, by
    # the reads of the three worker threads, each its own
    readers = collections.Counter(e["tid"] for e in spans(trace) if e["name"] == "read")
    assert sum(n >= 2000 for n in readers.values()) >= 3, readers
