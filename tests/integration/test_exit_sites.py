"""C++ calls that end at exits moved back from their single-stepped `ret` (elf/site.h): the
stack protector's jne in C++ built as Debian builds it, a jne taken on one way out and not on
the other, rsp found from rbp; every attach route (uprobe_multi, tracefs events, per-function
links), by pid and launched. The target counts its own calls of each kind."""
import collections
import os
import re
import subprocess

import lib
from lib import check_format, finish_tracer, load_trace, sigusr1, spans, start_tracer, wait_exit

SPEC = "operator:cxx_epilogues:onnx::*"
US = 300
ROUTES = {
    "uprobe_multi": {},
    "uprobe_events": {"TRACER_NO_UPROBE_MULTI": "1"},
    "uprobe": {"TRACER_NO_UPROBE_MULTI": "1", "TRACER_NO_UPROBE_EVENTS": "1"},
}


def ground_truth(err):
    m = re.search(r"cxx_epilogues: (\d+) iterations, (\d+) quick, (\d+) long, (\d+) frame, "
                  r"(\d+) resize", err)
    assert m, err
    return dict(zip(("iterations", "quick", "long", "frame", "resize"), map(int, m.groups())))


def check(trace, text, truth):
    """Each call a span, ended at its own exit: the long ones last at least US µs."""
    assert check_format(trace, text) == []
    meta = trace["metadata"]
    moved = {p["name"]: (p.get("exits"), p.get("exits_moved", 0)) for p in meta["probes"]}
    assert moved == {"onnx::Epilogues::Skip": (2, 1), "onnx::Epilogues::Frame": (1, 1),
                     "onnx::Resize::Compute": (1, 1)}, moved
    assert not meta["counts"].get("unmatched_returns"), meta["counts"]
    durs = collections.defaultdict(list)
    for e in spans(trace):
        durs[e["name"]].append(e["dur"])
    skip, frame = durs["onnx::Epilogues::Skip"], durs["onnx::Epilogues::Frame"]
    resize = durs["onnx::Resize::Compute"]
    # Skip(0) leaves through the jne's fall-through, Skip(US) through the other ret (the jne
    # taken): one span each, the long ones still long (a preempted quick one may be long too)
    assert len(skip) == truth["quick"] + truth["long"], (len(skip), truth)
    assert sum(d >= US for d in skip) >= truth["long"], (sorted(skip)[:5], truth)
    assert sum(d < US for d in skip) >= truth["quick"] // 2, (sorted(skip)[-5:], truth)
    assert len(frame) == truth["frame"] and min(frame) >= US, (len(frame), min(frame), truth)
    assert len(resize) == truth["resize"] and min(resize) >= US, (len(resize), truth)


def moved_bytes(trace):
    """The first byte of each moved exit: a jcc (70-7f, or 0f)."""
    with open(lib.target("cxx_epilogues"), "rb") as f:
        out = []
        for p in trace["metadata"]["probes"]:
            for off in p["exit_offsets"]:
                f.seek(off)
                out.append(f.read(1))
    return out


def test_moved_exits_by_pid_every_route(tmp):
    for route, env in ROUTES.items():
        out = os.path.join(tmp, route + ".json")
        p, (pid,) = lib.start_ready([lib.target("cxx_epilogues"), "--wait-signal",
                                     "--iterations", "150", "--us", US],
                                    stderr=subprocess.PIPE)
        tr = start_tracer("-p", pid, "-u", SPEC, "-o", out, env=env)
        sigusr1(pid)
        rc, _, err = wait_exit(p)
        assert rc == 0, err
        rc, terr = finish_tracer(tr)
        assert rc == 0, terr
        trace, text = load_trace(out)
        assert trace["metadata"]["attach"] == route, (route, trace["metadata"]["attach"])
        check(trace, text, ground_truth(err))
        # the two-way ret of Skip stays (a call comes before it); the other three are jccs
        first = moved_bytes(trace)
        assert first.count(b"\xc3") == 1 and all(b in (b"\x0f", b"\x75", b"\x78", b"\xc3")
                                                  for b in first), (route, first)


def test_moved_exits_launched(tmp):
    out = os.path.join(tmp, "x.json")
    rc, err = lib.run_tracer("-u", SPEC, "-o", out, "--", lib.target("cxx_epilogues"),
                             "--iterations", "100", "--us", US)
    assert rc == 0, err
    trace, text = load_trace(out)
    check(trace, text, ground_truth(err))


def test_moved_exits_cet_build(tmp):
    """Built as Ubuntu builds (CET): functions start with endbr64, and __stack_chk_fail's PLT
    stub is in .plt.sec, found through .rela.plt all the same."""
    out = os.path.join(tmp, "x.json")
    rc, err = lib.run_tracer("-u", SPEC.replace("cxx_epilogues", "cxx_epilogues_cet"), "-o", out,
                             "--", lib.target("cxx_epilogues_cet"), "--iterations", "100",
                             "--us", US)
    assert rc == 0, err
    trace, text = load_trace(out)
    check(trace, text, ground_truth(err))
    assert all(p.get("site_past") == "endbr64" for p in trace["metadata"]["probes"]
               if p["name"] == "onnx::Resize::Compute"), trace["metadata"]["probes"]


def test_exits_stay_at_ret_when_told(tmp):
    """TRACER_NO_EXIT_MOVE=1 (the benchmark's comparison) probes each `ret` itself."""
    out = os.path.join(tmp, "x.json")
    rc, err = lib.run_tracer("-u", SPEC, "-o", out, "--", lib.target("cxx_epilogues"),
                             "--iterations", "50", "--us", US, env={"TRACER_NO_EXIT_MOVE": "1"})
    assert rc == 0, err
    trace, _ = load_trace(out)
    assert not any(p.get("exits_moved") for p in trace["metadata"]["probes"])
    assert set(moved_bytes(trace)) == {b"\xc3"}
    assert len(spans(trace)) == 200, len(spans(trace))
