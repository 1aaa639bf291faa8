"""The timeline of `tracer report --html`: the bucketed data the page embeds is checked against the
trace itself (each thread's spans nested by time, the dominant category per pixel column and
depth, the scheduler states, the wake-up arrows, the counter), and what headless Chromium draws
is read back from the page (window.tracerTimeline counts what the script drew; pixels of the
canvas have the colours of the cells). A trace of a million spans on 300 threads gives a page of
bounded size."""
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time

import lib
import tracegen
from lib import Skip

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "viewers"))
import cdp  # noqa: E402

COLS, DEPTH, LABEL = 1000, 6, 210
CATS = ["decode", "operator", "queue", "io", "other", "gil", "python", "encode"]
CAT_COLOR = {"decode": "#7e57c2", "operator": "#00897b", "queue": "#64b5f6", "io": "#8d6e63",
             "other": "#90a4ae", "gil": "#ef6c00", "python": "#3949ab", "encode": "#d81b60"}
STATE_COLOR = [None, "#2e7d32", "#f9a825", "#cfd8dc", "#c62828", "#1565c0"]
RUNNING, RUNNABLE, SLEEPING, BLOCKED, QUEUE = 1, 2, 3, 4, 5
CH = ".123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
DATA_RE = re.compile(r'<script id="tl-data" type="application/json">(.*?)</script>', re.S)


def need_chromium():
    if shutil.which(cdp.CHROMIUM):
        return
    if os.environ.get("CI"):
        raise AssertionError("missing in CI: chromium")
    raise Skip("chromium not installed: apt-get install chromium")


def report_html(tmp, trace, *args, name="report.html"):
    out = os.path.join(tmp, name)
    p = subprocess.run([lib.TRACER, "report", trace, "--html", out, *args], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        page = f.read()
    return out, page, json.loads(DATA_RE.search(page).group(1))


def gen_trace(tmp, name="flows.json", nested=True, **kw):
    """tracegen's pipeline with wake-ups and a counter; and (nested) one more thread, nest-0,
    with random trees of spans of mixed categories, written in completion order as the recorder
    writes them (tracegen's nested spans share their parent's category)."""
    path = os.path.join(tmp, name)
    args = {"size": 40000, "seed": 1, "threads": 6, "flows": True}
    args.update(kw)
    tracegen.generate(path, args.pop("size"), **args)
    if nested:
        add_nested(path)
    return path


def add_nested(path, tid=4999):
    rng = random.Random(5)
    spans = []

    def tree(s, e, depth):
        t = s
        while t < e:
            a = t + rng.randrange(0, 30000)
            b = a + rng.choice((500, 3000, 20000, 200000, 900000))
            if b > e or (depth and a == s and b == e):
                return
            spans.append((a, b, rng.choice(CATS[:5])))
            if depth < 7 and rng.random() < 0.6:
                tree(a, b, depth + 1)
            t = b

    with open(path) as f:
        text = f.read()
    end = json.loads(text)["metadata"]["duration_ns"]
    tree(1000000, end - 1000000, 0)
    lines = [f'{{"ph":"M","name":"thread_name","pid":4000,"tid":{tid},'
             f'"args":{{"name":"nest-0"}}}},\n']
    for a, b, cat in sorted(spans, key=lambda x: (x[1], -x[0])):  # by end, children first
        lines.append(f'{{"ph":"X","name":"n","cat":"{cat}","ts":{tracegen.us(a)},'
                     f'"dur":{tracegen.us(b - a)},"pid":4000,"tid":{tid}}},\n')
    head = '{"traceEvents":[\n'
    assert text.startswith(head)
    with open(path, "w") as f:
        f.write(head + "".join(lines) + text[len(head):])


# ---- the trace, read independently of tracer ---------------------------------------------------

def read_trace(path):
    """(spans by tid, flows [(from tid, from ns, to tid, to ns)], counter samples [(ns, v)],
    scheduler events by tid [(ns, kind, prev_state)], thread names)."""
    with open(path) as f:
        text = f.read()
    doc = json.loads(text)
    spans, starts, flows, counter, names = {}, {}, [], [], {}
    for line in text.split("\n"):
        if not line.startswith("{\"ph\":"):
            continue
        e = json.loads(line.rstrip(","))
        m = re.search(r'"ts":([\d.]+)', line)
        if not m:
            continue
        ts = lib.us_to_ns(m.group(1))
        if e["ph"] == "X":
            dur = lib.us_to_ns(re.search(r'"dur":([\d.]+)', line).group(1))
            spans.setdefault(e["tid"], []).append((ts, ts + dur, CATS.index(e["cat"])))
        elif e["ph"] == "s":
            starts[e["id"]] = (e["tid"], ts)
        elif e["ph"] == "f" and e["id"] in starts:
            flows.append(starts.pop(e["id"]) + (e["tid"], ts))
        elif e["ph"] == "C":
            counter.append((ts, e["args"]["depth"]))
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[e["tid"]] = e["args"]["name"]
    sched = {}
    for line in doc["systemTraceEvents"].split("\n"):
        m = lib.FTRACE_RE.match(line)
        if not m:
            continue
        secs, frac = m.group(5).split(".")
        ts = int(secs) * 1000000000 + int(frac)
        if m.group(6) == "sched_switch":
            s = lib.SWITCH_RE.match(m.group(7))
            sched.setdefault(int(s.group(2)), []).append((ts, "out", s.group(4)))
            sched.setdefault(int(s.group(6)), []).append((ts, "in", None))
        else:
            tid = int(re.search(r"pid=(\d+)", m.group(7)).group(1))
            sched.setdefault(tid, []).append((ts, "wake", None))
    return spans, flows, counter, sched, names


def col(w0, wd, t):
    return 0 if t < w0 else min(COLS - 1, (t - w0) * COLS // wd)


def col_start(w0, wd, i):
    return w0 + (wd * i + COLS - 1) // COLS


def expected_rows(spans, w0, wd):
    """Each depth's cells: spans nested by time (sorted by start, the enclosing one first; a
    span's depth is the count of spans still open), the category with the most time in each
    column (ties: the lower), and how much of the column they fill."""
    acc = [[[0] * len(CATS) for _ in range(COLS)] for _ in range(DEPTH)]
    stack, used = [], 0
    for s, e, cat in sorted(spans, key=lambda x: (x[0], -x[1])):
        while stack and stack[-1] <= s:
            stack.pop()
        d = min(len(stack), DEPTH - 1)
        stack.append(e)
        a, b = max(s, w0), min(e, w0 + wd)
        if b <= a:
            continue
        used = max(used, d + 1)
        for c in range(col(w0, wd, a), col(w0, wd, b - 1) + 1):
            acc[d][c][cat] += min(b, col_start(w0, wd, c + 1)) - max(a, col_start(w0, wd, c))
    rows = []
    for d in range(used):
        cells = []
        for c in range(COLS):
            v, width = acc[d][c], col_start(w0, wd, c + 1) - col_start(w0, wd, c)
            total = sum(v)
            if not total:
                cells.append(".")
                continue
            best = max(range(len(CATS)), key=lambda k: (v[k], -k))
            cov = 3 if total * 4 >= width * 3 else 2 if total * 5 >= width * 2 else \
                1 if total * 10 >= width else 0
            cells.append(CH[1 + best * 4 + cov])
        rows.append("".join(cells))
    return rows


def queue_union(spans):
    out = []
    for s, e, cat in sorted(x for x in spans if x[2] == CATS.index("queue")):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def state_intervals(events, start, end):
    """[(s, e, state)] from a thread's switches and wake-ups, in time order; before its first
    event, what that event says it did."""
    out, st, since = [], None, start
    for ts, kind, prev in sorted(events, key=lambda x: x[0]):
        if st is None:
            st = {"out": RUNNING, "in": RUNNABLE, "wake": SLEEPING}[kind]
        new = st
        if kind == "out":
            new = RUNNABLE if prev.startswith("R") else BLOCKED if prev == "D" else SLEEPING
        elif kind == "in":
            new = RUNNING
        elif st not in (RUNNING, RUNNABLE):
            new = RUNNABLE
        out.append((since, ts, st))
        st, since = new, ts
    out.append((since, end, st if st is not None else SLEEPING))
    return out


def runs(cells):
    """Boxes drawn for a row of cells: one per run of equal non-empty cells."""
    return sum(1 for i, c in enumerate(cells) if c != "." and (i == 0 or cells[i - 1] != c))


# ---- the checks --------------------------------------------------------------------------------

def check_data(trace, data, rep):
    """The page's data against the trace. Returns the columns whose state was checked."""
    spans, flows, counter, sched, names = read_trace(trace)
    w0, wd = data["start_ns"], data["dur_ns"]
    assert data["cats"] == CATS
    stage_order = [s["stage"] for s in rep["stages"]]
    threads = sorted(rep["threads"], key=lambda t: (stage_order.index(t["stage"]), t["tid"]))
    assert [(l["tid"], l["name"], l["stage"]) for l in data["lanes"]] == \
        [(t["tid"], t["name"], t["stage"]) for t in threads]
    assert {l["tid"] for l in data["lanes"]} == set(names)
    checked = 0
    for lane in data["lanes"]:
        mine = spans.get(lane["tid"], [])
        assert lane["spans"] == sum(1 for s, e, _ in mine if e > w0 and s < w0 + wd)
        assert lane["rows"] == expected_rows(mine, w0, wd), lane["name"]
        # states: every column that lies wholly in one state (and wholly inside or outside
        # the queue spans, for sleeping and blocked) shows it
        q = queue_union(mine)
        for s, e, st in state_intervals(sched.get(lane["tid"], []), rep["start_ns"],
                                        rep["end_ns"]):
            for c in range(col(w0, wd, max(s, w0)), col(w0, wd, max(min(e, w0 + wd) - 1, w0)) + 1):
                cs, ce = col_start(w0, wd, c), col_start(w0, wd, c + 1)
                if not (s <= cs and ce <= e):
                    continue
                want = st
                if st in (SLEEPING, BLOCKED):
                    inside = [a for a, b in q if a <= cs and ce <= b]
                    if inside:
                        want = QUEUE
                    elif any(a < ce and cs < b for a, b in q):
                        continue
                assert CH.index(lane["states"][c]) == want, (lane["name"], c, want)
                checked += 1
    # the wake-ups ending in the window between drawn threads, one arrow per pair and column
    index = {l["tid"]: i for i, l in enumerate(data["lanes"])}
    want = {(index[a], index[b], col(w0, wd, tb)) for a, ta, b, tb in flows
            if w0 <= tb < w0 + wd and a in index and b in index}
    got = {(f[0], f[1], col(w0, wd, f[3])) for f in data["flows"]}
    assert got == want and len(data["flows"]) == len(want)
    assert data["wakeups"] == sum(f[4] for f in data["flows"]) == \
        sum(1 for a, ta, b, tb in flows if w0 <= tb < w0 + wd)
    # the counter: each value held until the next, the largest in each column
    cmax = [None] * COLS
    for i, (t, v) in enumerate(counter):
        end = counter[i + 1][0] if i + 1 < len(counter) else w0 + wd
        a, b = max(t, w0), min(end, w0 + wd)
        for c in range(col(w0, wd, a), col(w0, wd, b - 1) + 1) if b > a else ():
            cmax[c] = v if cmax[c] is None else max(cmax[c], v)
    assert [c["name"] for c in data["counters"]] == (["Input Queue depth"] if counter else [])
    if counter:
        assert data["counters"][0]["max"] == cmax
    return checked


def drawn(b):
    """What the page drew: its own summary, and the canvas pixel of one full cell per lane and
    of one state cell per lane, with the colours expected there."""
    return b.eval("""(() => {
        const S = window.tracerTimeline, D = JSON.parse(
            document.getElementById('tl-data').textContent);
        const g = document.getElementById('tl-canvas').getContext('2d');
        const CH = '.123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
        const hex = (x, y) => '#' + [...g.getImageData(x, y, 1, 1).data.slice(0, 3)]
            .map(v => v.toString(16).padStart(2, '0')).join('');
        const fc = document.getElementById('tl-flows').getContext('2d');
        const f = fc.getImageData(0, 0, fc.canvas.width, fc.canvas.height).data;
        let flowPixels = 0;
        for (let i = 3; i < f.length; i += 4) flowPixels += f[i] > 0;
        // the first column of every full-coverage cell value of each row, and of every state
        const pixels = S && S.lanes.map((l, i) => {
            const cells = [], states = [];
            D.lanes[i].rows.forEach((row, d) => {
                const seen = new Set();
                [...row].forEach((ch, c) => {
                    if (ch === '.' || (CH.indexOf(ch) - 1) % 4 !== 3 || seen.has(ch)) return;
                    seen.add(ch);
                    cells.push({col: c, depth: d, cat: D.cats[(CH.indexOf(ch) - 1) >> 2],
                                color: hex(210 + c, l.y + d * l.rowHeight + 1)});
                });
            });
            const seen = new Set();
            [...(D.states ? D.lanes[i].states : '')].forEach((ch, c) => {
                if (ch === '.' || seen.has(ch)) return;
                seen.add(ch);
                states.push({col: c, state: CH.indexOf(ch), color: hex(210 + c, l.stateY + 1)});
            });
            return {cells, states};
        });
        // the tooltip, over the first full cell of the first lane that has one
        let tip = null;
        const i = pixels ? pixels.findIndex(p => p.cells.length) : -1;
        if (i >= 0) {
            const c = pixels[i].cells[0], r = g.canvas.getBoundingClientRect();
            g.canvas.dispatchEvent(new MouseEvent('mousemove', {
                clientX: r.left + 210 + c.col + 0.5,
                clientY: r.top + S.lanes[i].y + c.depth * S.lanes[i].rowHeight + 1}));
            tip = {lane: i, cell: c, text: document.getElementById('tl-tip').textContent};
        }
        return {S, pixels, flowPixels, tip};
    })()""")


def check_drawn(got, data):
    s = got["S"]
    assert s, "the page did not draw the timeline (no window.tracerTimeline)"
    assert [(l["tid"], l["name"]) for l in s["lanes"]] == \
        [(l["tid"], l["name"]) for l in data["lanes"]]
    for shown, lane, px in zip(s["lanes"], data["lanes"], got["pixels"]):
        assert shown["depth"] == len(lane["rows"])
        assert shown["spanBoxes"] == sum(runs(r) for r in lane["rows"]), shown
        if data["states"]:
            assert shown["stateSegments"] == runs(lane["states"]) > 0, shown
        assert shown["arrowsOut"] == sum(1 for f in data["flows"] if data["lanes"][f[0]] is lane)
        assert shown["arrowsIn"] == sum(1 for f in data["flows"] if data["lanes"][f[1]] is lane)
        if lane["spans"]:
            assert shown["spanBoxes"] > 0
        for cell in px["cells"]:
            assert cell["color"] == CAT_COLOR[cell["cat"]], (lane["name"], cell)
        for st in px["states"]:
            assert st["color"] == STATE_COLOR[st["state"]], (lane["name"], st)
        assert bool(px["cells"]) == any("3" in r or any((CH.index(c) - 1) % 4 == 3
                                                        for c in r if c != ".")
                                        for r in lane["rows"])
    if got["tip"]:  # hovering a cell names its thread, time, category and depth
        lane, cell = data["lanes"][got["tip"]["lane"]], got["tip"]["cell"]
        assert got["tip"]["text"].startswith(f"{lane['name']} ({lane['tid']}) at "), got["tip"]
        assert got["tip"]["text"].endswith(f": {cell['cat']} span (depth {cell['depth']})"), \
            got["tip"]
    assert s["arrows"] == len(data["flows"])
    assert s["arrowsVisible"] == (len(data["flows"]) <= 300) == (not data["arrows_hidden"])
    assert (got["flowPixels"] > 0) == (len(data["flows"]) > 0)
    for shown, c in zip(s["counters"], data["counters"]):
        assert shown["columns"] == sum(v is not None for v in c["max"])


def open_page(tmp, page, shot=None):
    with cdp.Browser(os.path.join(tmp, "chromium"), width=1300, height=900,
                     log=os.path.join(tmp, "chromium.log")) as b:
        b.open("file://" + page)
        assert b.wait_for("document.readyState === 'complete'")
        got = drawn(b)
        loaded = b.eval("performance.getEntriesByType('resource').map(e => e.name)")
        if shot:
            b.screenshot(shot, full_page=True)
    assert loaded == [] and not b.dialogs
    return got


def report_json(trace):
    p = subprocess.run([lib.TRACER, "report", trace, "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_timeline_whole_recording(tmp):
    """A small pipeline with wake-up arrows and a queue-depth counter: few spans, so the
    default window is the whole recording; every lane, cell, state, arrow and counter value is
    what the trace says, and the page draws them."""
    need_chromium()
    trace = gen_trace(tmp)
    rep = report_json(trace)
    page, text, data = report_html(tmp, trace)
    assert data["chosen"] and (data["start_ns"], data["dur_ns"]) == \
        (rep["start_ns"], rep["end_ns"] - rep["start_ns"])
    assert len(data["lanes"]) == 7 and data["flows"] and data["counters"]
    nest = [l for l in data["lanes"] if l["name"] == "nest-0"][0]
    assert len(nest["rows"]) >= 4 and nest["spans"] > 50, (len(nest["rows"]), nest["spans"])
    assert data["busiest"] == rep["verdict"].split()[1]  # "bottleneck: decode[*] — ..."
    checked = check_data(trace, data, rep)
    assert checked > 7 * COLS // 2, f"only {checked} state columns checked"
    got = open_page(tmp, page, os.path.join(tmp, "timeline.png"))
    check_drawn(got, data)
    assert got["tip"], "no cell to hover"


def test_timeline_window(tmp):
    """--window picks the window: the data and the drawing hold what the trace has there; the
    default window of a longer trace is a part of it, as long as the rule says, where the
    busiest stage works most (its time in spans other than queue waits)."""
    need_chromium()
    trace = gen_trace(tmp, "long.json", size=400000)
    rep = report_json(trace)
    page, text, data = report_html(tmp, trace, "--window", "3ms,2.5ms")
    assert not data["chosen"] and (data["start_ns"], data["dur_ns"]) == (3000000, 2500000)
    assert "--window 3000.000,2500.000" in text
    check_data(trace, data, rep)
    check_drawn(open_page(tmp, page), data)
    # the default: about 40 spans per thread, at the slices where decode[*] runs most
    page, text, data = report_html(tmp, trace, name="default.html")
    total, lanes = rep["spans"], len(rep["threads"])
    rec = rep["end_ns"] - rep["start_ns"]
    k = -(-40 * lanes * 200 // total)
    assert data["chosen"] and abs(data["dur_ns"] - k * rec / 200) <= 2, (data["dur_ns"], k)
    check_data(trace, data, rep)

    spans, _, _, _, names = read_trace(trace)
    work = [(s, e) for tid, name in names.items() if name.startswith("decode")
            for s, e, cat in spans.get(tid, []) if cat != CATS.index("queue")]

    def busy(w0, wd):
        return sum(max(0, min(e, w0 + wd) - max(s, w0)) for s, e in work)

    best = busy(data["start_ns"], data["dur_ns"])
    assert best > 0
    for i in range(0, 200 - k + 1, 3):  # no other place of that length holds more of it
        w0 = rep["start_ns"] + (rec * i + 199) // 200
        assert busy(w0, data["dur_ns"]) <= best + data["dur_ns"] // 100, i


@lib.offline
def test_timeline_bad_window(tmp):
    """--window without --html, malformed, or after the recording: one error line, no page."""
    trace = os.path.join(lib.ROOT, "tests", "golden", "pipeline.json")
    out = os.path.join(tmp, "r.html")
    for args, rc, msg in ((["--window", "1ms,2ms"], 2, "--window is the HTML timeline's"),
                          (["--html", out, "--window", "1ms"], 2, "bad --window '1ms'"),
                          (["--html", out, "--window", "1ms,0"], 2, "bad --window"),
                          (["--html", out, "--window", "x,2ms"], 2, "bad --window"),
                          (["--html", out, "--window", "1s,2ms"], 1, "after the recording")):
        p = subprocess.run([lib.TRACER, "report", trace, *args], capture_output=True, text=True)
        lines = p.stderr.strip().split("\n")
        assert p.returncode == rc and msg in lines[0], (args, p.returncode, p.stderr)
        assert len([x for x in lines if x.startswith("tracer:")]) == 1, p.stderr
        assert not os.path.exists(out)


@lib.offline
def test_timeline_lanes_capped(tmp):
    """450 threads: the 400 busiest (most spans) are drawn, grouped by stage; the page says how
    many others it left out."""
    path = os.path.join(tmp, "many.json")
    events = []
    for i in range(450):
        tid = 1000 + i
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid,
                       "args": {"name": f"w{i % 3}-{i}"}})
        for k in range(1 if i % 9 == 0 else 2):  # 50 threads with one span, 400 with two
            events.append({"ph": "X", "name": "f", "cat": "operator", "ts": 10.0 * k + i % 7,
                           "dur": 5.0, "pid": 1, "tid": tid})
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)
    page, text, data = report_html(tmp, path)
    assert len(data["lanes"]) == 400 and data["other_threads"] == 50
    assert {l["tid"] for l in data["lanes"]} == {1000 + i for i in range(450) if i % 9}
    assert all(l["spans"] == 2 and l["rows"] for l in data["lanes"])
    stages = [l["stage"] for l in data["lanes"]]
    assert stages == sorted(stages, key=stages.index)  # each stage's lanes together
    assert "50 other threads (the least busy) are not drawn" in text


@lib.offline
def test_timeline_many_threads(tmp):
    """50,000 threads, each a process and so a stage of its own: the timeline takes the 400
    busiest and costs about what the report does (matching each thread to its stage one by one
    took 6.5 s of CPU where the report took 0.2 s). CPU time, with room: the machine may be
    busy."""
    n = 50000
    path = os.path.join(tmp, "threads.json")
    with open(path, "w") as f:
        f.write('{"traceEvents":[\n')
        for i in range(n):
            f.write('{"ph":"M","name":"thread_name","pid":%d,"tid":%d,"args":{"name":"t%d"}},\n'
                    '{"ph":"X","name":"f","cat":"io","ts":%d,"dur":%d,"pid":%d,"tid":%d},\n'
                    % (i + 1, i + 1, i, i, 5 + (i % 3 == 0), i + 1, i + 1))
        f.write('{"ph":"M","name":"process_name","pid":1,"tid":1,"args":{"name":"p"}}\n]}\n')

    def cpu():  # CPU time of the children so far: a busy machine stretches wall time only
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    start = cpu()
    report_json(path)
    plain = cpu() - start
    start = cpu()
    page, text, data = report_html(tmp, path)
    html = cpu() - start
    assert len(data["lanes"]) == 400 and data["other_threads"] == n - 400
    assert html < 5 * plain + 1, (html, plain)


@lib.offline
def test_timeline_spans_bounded(tmp):
    """Past the bound of spans kept (lowered here to 100), only spans at least a column long
    are kept: the long ones are still drawn, at their depth, the short ones counted."""
    path = os.path.join(tmp, "spans.json")
    events = [{"ph": "X", "name": "s", "cat": "io", "ts": 10.0 * i + 1, "dur": 1.0, "pid": 1,
               "tid": 2} for i in range(1000)]
    events += [{"ph": "X", "name": "mid", "cat": "queue", "ts": 5000.0, "dur": 2000.0, "pid": 1,
                "tid": 2},
               {"ph": "X", "name": "long", "cat": "operator", "ts": 0.0, "dur": 10000.0,
                "pid": 1, "tid": 2}]
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)
    env = dict(os.environ, TRACER_TIMELINE_MAX_SPANS="100")
    out = os.path.join(tmp, "r.html")
    p = subprocess.run([lib.TRACER, "report", path, "--html", out, "--window", "0,10ms"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        text = f.read()
    data = json.loads(DATA_RE.search(text).group(1))
    lane = data["lanes"][0]
    assert data["spans_dropped"] == 900 and lane["spans"] == 1002
    assert "more than 100 spans: 900 shorter than a column are not drawn" in text
    op, queue = CH[1 + 1 * 4 + 3], CH[1 + 2 * 4 + 3]
    assert lane["rows"][0] == op * COLS
    io = {CH[1 + 3 * 4 + cov] for cov in range(4)}
    # the first 100 short spans (columns 0..99) are kept, the others not; the queue span is
    assert lane["rows"][1][500:700] == queue * 200
    assert set(lane["rows"][1][:100]) & io and not set(lane["rows"][1][100:]) & io
    # without the bound, every span is drawn
    page, text, data = report_html(tmp, path, "--window", "0,10ms", name="all.html")
    assert data["spans_dropped"] == 0 and set(data["lanes"][0]["rows"][1][900:]) & io


@lib.offline
def test_timeline_odd_events(tmp):
    """Events tracer does not write itself: a trace starting below 0, a flow end without its
    start, counters whose args are not an object or not finite numbers. The page's data stays
    strict JSON and the window can be given back as it is shown."""
    path = os.path.join(tmp, "odd.json")
    events = [
        {"ph": "i", "s": "g", "name": "recording started", "pid": 0, "tid": 0, "ts": 0,
         "args": {"t0_monotonic_ns": 1}},
        {"ph": "X", "name": "a", "cat": "io", "ts": -5.5, "dur": 20, "pid": 1, "tid": 1},
        {"ph": "s", "id": "zz", "ts": 1, "pid": 1, "tid": 1},
        {"ph": "f", "id": "zz", "ts": 2, "pid": 1, "tid": 1},
        {"ph": "f", "id": "nope", "ts": 3, "pid": 1, "tid": 1},
        {"ph": "C", "name": "c", "ts": 3, "pid": 1, "args": [1, 2]}]
    with open(path, "w") as f:
        f.write(json.dumps({"traceEvents": events})[:-2] +
                ',{"ph":"C","name":"c","ts":4,"pid":1,"args":{"v":"x","w":1e999}}]}')
    page, text, _ = report_html(tmp, path)

    def strict(name):
        raise AssertionError(f"not JSON: {name}")

    data = json.loads(DATA_RE.search(text).group(1), parse_constant=strict)
    assert data["wakeups"] == 1 and len(data["flows"]) == 1 and data["counters"] == []
    assert (data["start_ns"], data["dur_ns"]) == (-5500, 20000)
    assert "--window -5.500,20.000" in text
    assert data["lanes"][0]["rows"][0] == CH[1 + 3 * 4 + 3] * COLS
    page, text, again = report_html(tmp, path, "--window", "-5.500,20.000", name="again.html")
    assert again["lanes"] == data["lanes"] and not again["chosen"]


def test_timeline_million_spans(tmp):
    """About a million spans on 300 threads: the page stays the size of its buckets (not of the
    spans: a trace ten times smaller gives a page of the same order), and Chromium draws every
    lane. Times are measured and kept in OUTPUT/artifacts/timeline-million.txt, not bounded."""
    need_chromium()
    small = gen_trace(tmp, "small.json", False, size=33 << 20, threads=300)
    big = gen_trace(tmp, "big.json", False, size=330 << 20, threads=300)
    sizes, times = {}, {}
    for name, trace in (("small", small), ("big", big)):
        start = time.monotonic()
        page, text, data = report_html(tmp, trace, name=name + ".html")
        times[name] = time.monotonic() - start
        sizes[name] = os.path.getsize(page)
        assert len(data["lanes"]) == 300 and data["spans_dropped"] == 0
    with open(big) as f:
        nspans = sum(line.startswith('{"ph":"X"') for line in f)
    assert nspans > 900000, nspans
    # rows, states and arrows: at most 300 lanes x 7 strings x 1000 columns, 4000 arrows
    assert sizes["big"] < 300 * 7 * COLS + 4000 * 60 + 100000 * 16 + 200000, sizes
    assert sizes["big"] < 3 * sizes["small"], sizes
    start = time.monotonic()
    got = open_page(tmp, os.path.join(tmp, "big.html"))
    times["browser"] = time.monotonic() - start
    assert len(got["S"]["lanes"]) == 300
    with_boxes = sum(l["spanBoxes"] > 0 for l in got["S"]["lanes"])
    assert with_boxes == sum(bool(l["rows"]) for l in data["lanes"]) > 250, with_boxes
    folder = os.path.join(lib.OUTPUT, "artifacts")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "timeline-million.txt"), "w") as f:
        f.write(f"{nspans} spans, 300 threads: report --html {times['big']:.1f} s, page "
                f"{sizes['big']} bytes; a tenth of it: {times['small']:.1f} s, "
                f"{sizes['small']} bytes; Chromium opened and drew it in "
                f"{times['browser']:.1f} s\n")
