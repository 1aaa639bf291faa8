"""Calls that do not return in order never corrupt the nesting and are counted."""
import os
import subprocess

import lib
from lib import _procs, check_format, finish_tracer, load_trace, spans, start_tracer, target


def test_longjmp_deep_recursion_thread_exit(tmp):
    rounds, depth = 5, 100
    p = subprocess.Popen([target("unwind"), "--wait-signal", str(rounds), str(depth)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    _procs.append(p)
    pid = int(p.stdout.readline().split()[1])
    out = os.path.join(tmp, "u.json")
    tr = start_tracer("-p", pid, "-o", out, "-u", "other:unwind:jump_*", "-u", "other:unwind:leaf",
                      "-u", "other:unwind:recurse", "-u", "other:unwind:exit_inside")
    os.kill(pid, 10)
    assert p.stdout.readline().strip() == "done"
    tr.send_signal(2)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    p.stdin.close()
    p.wait(timeout=10)
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    by = {}
    for e in spans(trace):
        by.setdefault(e["name"], []).append(e)
    c = trace["metadata"]["counts"]
    # every leaf call is complete, and the longjmp'd frames end no later than the next call
    assert len(by["leaf"]) == rounds and not any(e.get("args") for e in by["leaf"])
    jumps = sorted(by["jump_outer"] + by["jump_inner"], key=lambda e: e["ts"])
    assert len(jumps) == 2 * rounds and all(e["args"]["incomplete"] for e in jumps)
    for leaf in by["leaf"]:
        before = [j for j in jumps if j["ts"] < leaf["ts"]]
        assert all(j["ts"] + j["dur"] <= leaf["ts"] + 0.001 for j in before)
    # recursion: the kernel hijacks 64 nested returns; deeper calls have none and are not
    # recorded, so each round gives 64 complete spans at most, plus the rest counted
    rec = by["recurse"]
    complete = [e for e in rec if not e.get("args")]
    assert len(complete) >= rounds * 60, len(complete)
    assert len(rec) + c["calls_too_deep"] >= rounds * (depth + 1) - rounds
    # the thread that exited inside exit_inside: its span closed at its exit
    ex = by["exit_inside"]
    assert len(ex) == 1 and ex[0]["args"]["incomplete"]
    assert c["incomplete_thread_exit"] == 1
    assert c["incomplete_no_return"] >= 2 * rounds


def test_tail_call_ends_both_frames(tmp):
    """outer() ends with `jmp inner` (tests/targets/tailcall.c, as av_freep -> av_free): one
    return ends both spans, so no span is incomplete and no return unmatched; outer's span
    holds inner's."""
    out = os.path.join(tmp, "tail.json")
    rc, err = lib.run_tracer("-u", "other:tailcall:outer", "-u", "other:tailcall:inner",
                             "-o", out, "--", target("tailcall"), "200")
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    counts = trace["metadata"]["counts"]
    assert counts["unmatched_returns"] == 0 and counts["incomplete_no_return"] == 0, counts
    outer = sorted((e for e in spans(trace) if e["name"] == "outer"), key=lambda e: e["ts"])
    inner = sorted((e for e in spans(trace) if e["name"] == "inner"), key=lambda e: e["ts"])
    assert len(outer) == len(inner) == 200
    for o, i in zip(outer, inner):
        assert o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"], (o, i)
