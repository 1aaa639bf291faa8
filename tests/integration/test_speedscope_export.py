"""tracer export --speedscope: speedscope's own file format. The structure is checked here
without a browser: one evented profile per thread with spans, one frame per distinct span name
(calls whose args differ share it), events that open and close in LIFO order at the spans' own
times, whatever order the file holds them in. test_viewers.py loads a real recording's export
in speedscope itself."""
import collections
import json
import os
import subprocess

import lib
import tracegen

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def export(path, out):
    p = subprocess.run([lib.TRACER, "export", path, "--speedscope", "-o", out],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        return json.load(f), p.stderr


def spans_by_thread(path):
    with open(path) as f:
        trace = json.load(f)
    threads = collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e.get("ph") == "X":
            s = round(e["ts"] * 1000)
            threads[e["tid"]].append((s, s + round(e["dur"] * 1000), e["name"]))
    return threads


def replay(profile, frames):
    """The profile's spans, (start, end, name), after checking that its events nest: times
    never go back, every close matches the last open."""
    stack, out, last = [], [], profile["startValue"]
    for ev in profile["events"]:
        assert ev["at"] >= last, ("time goes back", ev)
        assert profile["startValue"] <= ev["at"] <= profile["endValue"], ev
        last = ev["at"]
        if ev["type"] == "O":
            stack.append(ev)
        else:
            assert ev["type"] == "C" and stack and stack[-1]["frame"] == ev["frame"], \
                ("close out of order", ev, stack[-1:])
            o = stack.pop()
            out.append((o["at"], ev["at"], frames[ev["frame"]]["name"]))
    assert not stack, "events left open"
    return sorted(out)


def check(doc):
    assert doc["$schema"] == SCHEMA
    frames = doc["shared"]["frames"]
    names = [f["name"] for f in frames]
    assert len(names) == len(set(names)), "a name has two frames"
    for p in doc["profiles"]:
        assert p["type"] == "evented" and p["unit"] == "nanoseconds", p
    return frames


@lib.offline
def test_speedscope_structure_generated(tmp):
    src = os.path.join(tmp, "gen.json")
    tracegen.generate(src, 2 << 20, seed=4)
    doc, _ = export(src, os.path.join(tmp, "gen.speedscope.json"))
    frames = check(doc)
    want = spans_by_thread(src)
    assert {f["name"] for f in frames} == {n for v in want.values() for _, _, n in v}
    # run_operator carries {"op": ...}: three different args, one frame
    assert [f["name"] for f in frames].count("run_operator") == 1
    assert len(doc["profiles"]) == len(want) == 8
    for p in doc["profiles"]:
        tid = int(p["name"].rsplit("tid ", 1)[1].rstrip(")"))
        assert p["name"].startswith("pipeline (pid 4000), "), p["name"]
        assert replay(p, frames) == sorted(want[tid]), p["name"]


@lib.offline
def test_speedscope_nesting_from_any_order(tmp):
    """Spans written in completion order (children first), a parent and child with one start,
    a zero-length span, one overlapping its parent's end (cut there, with a warning), two
    threads of which one has no name; a B event is left out and said (as report does)."""
    def x(name, ts, dur, tid, args=None):
        e = {"ph": "X", "name": name, "cat": "operator", "ts": ts, "dur": dur, "pid": 1,
             "tid": tid}
        if args:
            e["args"] = args
        return e
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 1, "args": {"name": "p"}},
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "w"}},
              x("child", 10, 5, 2, {"i": 1}), x("leaf", 16, 0, 2),
              x("child", 17, 2, 2, {"i": 2}), x("outer", 10, 20, 2),
              x("late", 25, 10, 2),  # overlaps outer's end at 30
              x("solo", 1, 1, 3),
              {"ph": "B", "name": "open", "ts": 2, "pid": 1, "tid": 3}]
    src = os.path.join(tmp, "hand.json")
    with open(src, "w") as f:
        json.dump({"traceEvents": events}, f)
    doc, err = export(src, os.path.join(tmp, "hand.speedscope.json"))
    frames = check(doc)
    assert sorted(f["name"] for f in frames) == ["child", "late", "leaf", "outer", "solo"]
    assert "1 span overlapped the end of an enclosing span" in err, err
    assert "1 B/E events ignored" in err, err
    w, solo = doc["profiles"]
    assert w["name"] == "p (pid 1), w (tid 2)" and solo["name"] == "thread (tid 3)", doc
    assert (w["startValue"], w["endValue"]) == (1000, 35000)
    idx = {f["name"]: i for i, f in enumerate(frames)}
    got = [(e["type"], frames[e["frame"]]["name"], e["at"]) for e in w["events"]]
    assert got == [("O", "outer", 10000), ("O", "child", 10000), ("C", "child", 15000),
                   ("O", "leaf", 16000), ("C", "leaf", 16000), ("O", "child", 17000),
                   ("C", "child", 19000), ("O", "late", 25000), ("C", "late", 30000),
                   ("C", "outer", 30000)], got
    assert solo["events"] == [{"type": "O", "frame": idx["solo"], "at": 1000},
                              {"type": "C", "frame": idx["solo"], "at": 2000}]


@lib.offline
def test_speedscope_bad_input(tmp):
    notrace = os.path.join(tmp, "notes.txt")
    with open(notrace, "w") as f:
        f.write("hello\n")
    out = os.path.join(tmp, "out.json")
    for args, rc, what in (([os.path.join(tmp, "missing.json")], 1, "missing.json"),
                           ([notrace], 1, "not a Chrome trace"),
                           ([notrace, "--csv"], 2, "exclude each other")):
        p = subprocess.run([lib.TRACER, "export", *args, "--speedscope", "-o", out],
                           capture_output=True, text=True)
        lines = p.stderr.strip().split("\n")
        assert p.returncode == rc and len(lines) == 1 and what in lines[0], (args, p)
        assert not os.path.exists(out)
