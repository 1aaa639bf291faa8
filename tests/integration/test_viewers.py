"""Traces opened in a real browser: Debian's headless Chromium with the offline speedscope viewer
(npm package, fetched by `make viewers`), driven through the DevTools protocol
(tests/viewers/cdp.py). The browser itself says which threads and spans it shows: the toolbar,
the sandwich table (DOM) and the labels the flame chart draws on its canvas. Screenshots are kept
in OUTPUT/artifacts/. Also: the man page renders cleanly and documents every option, and the bash
completion completes what it should."""
import contextlib
import functools
import html.parser
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import lib
from lib import (Skip, check_format, finish_tracer, load_trace, sigusr1, spans, start_pipeline,
                 start_tracer, wait_exit)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "viewers"))
import cdp  # noqa: E402

# Records every string a page draws on a 2D canvas: speedscope draws span names (trimmed in the
# middle with an ellipsis when they do not fit) and the time axis with fillText.
CANVAS_HOOK = """(() => {
	window.__labels = new Set();
	const fill = CanvasRenderingContext2D.prototype.fillText;
	CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
		window.__labels.add(String(text));
		return fill.call(this, text, ...rest);
	};
})();"""
AXIS_LABEL = re.compile(r"^-?[\d.]+\s*(ns|µs|us|ms|s|min|h)$")
TOOLBAR = re.compile(r"^(.*) \((\d+)/(\d+)\)$", re.M)


def need(condition, what):
    """Browser tests need Chromium and the viewer; on a developer's machine a missing one skips
    the test with what to do, in CI it fails (CI must not skip)."""
    if condition:
        return
    if os.environ.get("CI"):
        raise AssertionError(f"missing in CI: {what}")
    raise Skip(what)


def need_chromium():
    need(shutil.which(cdp.CHROMIUM), "chromium not installed: apt-get install chromium")


def speedscope_dir():
    path = os.path.join(lib.OUTPUT, "viewers", "node_modules", "speedscope", "dist", "release")
    need(os.path.isfile(os.path.join(path, "index.html")),
         f"speedscope not installed: run make OUTPUT={lib.OUTPUT} viewers")
    need_chromium()
    return path


def artifact(src, name):
    folder = os.path.join(lib.OUTPUT, "artifacts")
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(src, os.path.join(folder, name))


@contextlib.contextmanager
def http_server(root):
    """Serves root on 127.0.0.1 from a thread; yields the base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                          functools.partial(Quiet, directory=root))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
        t.join()


def record(tmp, *pipeline_args):
    """A trace of the sample pipeline; returns (path, trace)."""
    out = os.path.join(tmp, "pipeline-trace.json")
    pl, pid = start_pipeline(*pipeline_args)
    tr = start_tracer("-p", pid, "-P", os.path.join(lib.ROOT, "probes", "pipeline.json"), "-o", out)
    sigusr1(pid)
    rc, _, _ = wait_exit(pl)
    assert rc == 0, f"pipeline failed: {rc}"
    trc, err = finish_tracer(tr)
    assert trc == 0, f"tracer exit {trc}: {err}"
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    return out, trace


def expected_profiles(trace):
    """What speedscope should list: one profile per thread with spans, named from the process
    and thread names, and the span names on each."""
    procs, threads = {}, {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
    names = {}
    for e in spans(trace):
        key = (e["pid"], e["tid"])
        title = f"{procs[e['pid']]} (pid {e['pid']}), {threads[key]} (tid {e['tid']})"
        names.setdefault(title, set()).add(frame_name(e))
    return names


def frame_name(e):
    """speedscope names a slice's frame by its name and its args (JSON.stringify), so calls
    with different args are different frames."""
    if "args" not in e:
        return e["name"]
    return e["name"] + " " + json.dumps(e["args"], separators=(",", ":"), ensure_ascii=False)


def label_matches(label, names):
    """speedscope trims a label in the middle ("Wait on…Queue") to fit its box."""
    head, sep, tail = label.partition("…")
    return any(n == label or (sep and n.startswith(head) and n.endswith(tail)) for n in names)


def open_in_speedscope(browser, base, trace_url, timeout=30):
    """Loads a trace in speedscope; returns what the page shows once it has settled: title,
    toolbar ((name, index, count); count 1 when there is one profile), body text, and the error
    speedscope reported (an alert for a format it does not recognise, "Something went wrong" for
    a failed import)."""
    browser.dialogs.clear()
    # the query makes each trace a new page: speedscope reads the hash only when it loads
    browser.open(f"{base}/viewer/index.html?{trace_url}#profileURL={base}/{trace_url}")
    deadline = time.monotonic() + timeout
    while True:
        text = browser.eval("document.body ? document.body.innerText : ''")
        loaded = "Time Order" in text  # the view tabs appear with a profile
        error = "; ".join(browser.dialogs)
        if "Something went wrong" in text:
            error = (error + "; " if error else "") + "Something went wrong"
        if loaded or error or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert loaded or error, f"speedscope neither showed a profile nor an error: {text[:300]}"
    toolbar = None
    if loaded:
        lines = text.split("\n")
        name = lines[lines.index(next(x for x in lines if "Time Order" in x)) + 1]
        m = TOOLBAR.match(name)
        toolbar = (m.group(1), int(m.group(2)), int(m.group(3))) if m else (name, 1, 1)
    return {"title": browser.eval("document.title"), "text": text, "error": error,
            "toolbar": toolbar}


def nesting_warnings(browser):
    """speedscope warns when the slices of a thread do not nest."""
    return [w for w in console_messages(browser, "warning")
            if "Tried to end" in w or "still open at end of profile" in w]


def settle(browser, expression, convert, done, timeout=30):
    """Polls a page value until done(convert(value)) or the time is up; returns the last
    converted value (the caller asserts on it)."""
    deadline = time.monotonic() + timeout
    while True:
        got = convert(browser.eval(expression))
        if done(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def console_messages(browser, level):
    return [" ".join(str(a.get("value", "")) for a in e["params"]["args"])
            for e in browser.events
            if e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == level]


def test_speedscope_shows_threads_and_spans(tmp):
    viewer = speedscope_dir()
    # decode-bound, few frames: every thread's spans are wide enough to carry a label
    path, trace = record(tmp, "--frames", "24", "--bottleneck", "decode")
    want = expected_profiles(trace)
    assert len(want) >= 6, want  # reader, 2 decoders, 2 operators, writer
    # beyond spans: queue depth counters and wake-up arrows ride along; the viewer must load
    # the trace with them (it draws neither: they must not show up as frames either)
    counters = {e["name"] for e in trace["traceEvents"] if e["ph"] == "C"}
    flows = [e for e in trace["traceEvents"] if e["ph"] in ("s", "f")]
    assert counters and flows, "the trace has no counters or no flows to check"
    not_frames = counters | {e["name"] for e in flows}
    os.symlink(viewer, os.path.join(tmp, "viewer"))
    shot = os.path.join(tmp, "speedscope-pipeline.png")
    with http_server(tmp) as base, \
            cdp.Browser(os.path.join(tmp, "chromium"), log=os.path.join(tmp, "chromium.log")) as b:
        b.call("Runtime.enable")
        b.on_new_document(CANVAS_HOOK)
        state = open_in_speedscope(b, base, os.path.basename(path))
        assert not state["error"], state["text"]
        assert state["title"] == "pipeline-trace.json - speedscope", state["title"]
        _, index, count = state["toolbar"]
        assert (index, count) == (1, len(want)), state["toolbar"]
        # the profile list in the page (hidden until clicked) names every thread with spans
        listed = b.eval("document.body.textContent")
        for title in want:
            assert title in listed, f"speedscope does not list {title}"
        b.screenshot(shot)
        artifact(shot, "speedscope-pipeline.png")
        seen = set()
        every_name = set().union(*want.values())
        for i in range(1, count + 1):
            name = b.wait_for(f"(() => {{ const m = document.body.innerText.match("
                              f"/^(.*) \\({i}\\/{count}\\)$/m); return m && m[1]; }})()")
            assert name in want, f"profile {i}: {name!r} is not a thread of the trace"
            seen.add(name)
            # time order: the flame chart draws span names of this thread only
            labels = b.wait_for("(() => { const l = [...window.__labels].filter(x => "
                                f"!/{AXIS_LABEL.pattern}/.test(x)); return l.length && l; }})()")
            assert labels, f"{name}: the flame chart drew no span label"
            wrong = [lb for lb in labels if not label_matches(lb, want[name])]
            assert not wrong, f"{name}: labels of spans not on this thread: {wrong}"
            assert not not_frames & set(labels), labels
            # sandwich: a table (DOM) with one row per span name of this thread
            b.press("3")
            # (a virtual list: all rows are there when few, the top ones when many)
            rows = want[name] if len(want[name]) <= 15 else None
            shown = settle(b, "document.body.innerText.includes('Symbol Name') &&"
                           " document.body.innerText.split('\\n')",
                           lambda lines: {x.strip() for x in lines or ()} & every_name,
                           lambda got: got == rows if rows else got)
            assert shown and shown <= want[name], f"{name}: sandwich shows {shown - want[name]}"
            assert rows is None or shown == rows, f"{name}: sandwich lacks {rows - shown}"
            # the next thread, still in the sandwich view; labels drawn from here on are its own
            b.press("n")
            if i < count:
                assert b.wait_for(f"document.body.innerText.includes('({i + 1}/{count})')")
            b.eval("window.__labels.clear()")
            b.press("1")
        assert seen == set(want)
        # thread names: each profile is named from the trace's process_name and thread_name
        for title in seen:
            assert re.match(r"^pipeline \(pid \d+\), (reader|writer|decode-\d|op-\d) "
                            r"\(tid \d+\)$", title), title
        warnings = nesting_warnings(b)
        assert not warnings, warnings[:3]


def test_speedscope_reports_broken_files(tmp):
    """The negative controls: a trace cut off mid-event (as a SIGKILLed recorder leaves it)
    makes speedscope report an error, and slices that overlap on a thread make it warn; the
    checks above see both."""
    viewer = speedscope_dir()
    os.symlink(viewer, os.path.join(tmp, "viewer"))
    head = ('{"traceEvents":[\n'
            '{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"decode-0"}},\n')
    with open(os.path.join(tmp, "cut.json"), "w") as f:
        f.write(head + '{"ph":"X","name":"decode_frame","cat":"decode","ts":1.000,"dur":')
    with open(os.path.join(tmp, "overlap.json"), "w") as f:
        f.write(head + '{"ph":"X","name":"a","cat":"decode","ts":1.000,"dur":10.000,"pid":1,'
                '"tid":1},\n{"ph":"X","name":"b","cat":"decode","ts":5.000,"dur":10.000,"pid":1,'
                '"tid":1}\n],"metadata":{}}\n')
    shot = os.path.join(tmp, "speedscope-broken.png")
    with http_server(tmp) as base, \
            cdp.Browser(os.path.join(tmp, "chromium"), log=os.path.join(tmp, "chromium.log")) as b:
        b.call("Runtime.enable")
        cut = open_in_speedscope(b, base, "cut.json")
        b.screenshot(shot)
        artifact(shot, "speedscope-broken.png")
        assert not nesting_warnings(b)
        overlap = open_in_speedscope(b, base, "overlap.json")
        assert b.wait_for("document.title.endsWith(' - speedscope')")
        warnings = nesting_warnings(b)
    assert "Unrecognized format" in cut["error"], cut
    assert cut["toolbar"] is None, cut["toolbar"]
    assert "decode-0" not in cut["text"]
    assert not overlap["error"] and overlap["toolbar"] == ("decode-0 (pid 1, tid 1)", 1, 1), overlap
    assert any('Tried to end "a"' in w for w in warnings), warnings


def test_speedscope_loads_the_export(tmp):
    """tracer export --speedscope opened in speedscope: a profile per thread, and in each one's
    sandwich exactly its span names, one row each (speedscope's Chrome importer makes a frame
    per name and args: every decode_frame call, whose frame argument differs, its own row)."""
    viewer = speedscope_dir()
    path, trace = record(tmp, "--frames", "24", "--bottleneck", "decode")
    out = os.path.join(tmp, "pipeline.speedscope.json")
    p = subprocess.run([lib.TRACER, "export", path, "--speedscope", "-o", out],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    want = {title: {n.split(" {")[0] for n in names}
            for title, names in expected_profiles(trace).items()}
    every_name = set().union(*want.values())
    assert any(n.startswith("decode_frame {") for v in expected_profiles(trace).values()
               for n in v), "no decode_frame with args to tell the importers apart"
    os.symlink(viewer, os.path.join(tmp, "viewer"))
    shot = os.path.join(tmp, "speedscope-export.png")
    with http_server(tmp) as base, \
            cdp.Browser(os.path.join(tmp, "chromium"), log=os.path.join(tmp, "chromium.log")) as b:
        b.call("Runtime.enable")
        state = open_in_speedscope(b, base, os.path.basename(out))
        assert not state["error"], state["text"]
        _, index, count = state["toolbar"]
        assert (index, count) == (1, len(want)), (state["toolbar"], want.keys())
        seen = set()
        for i in range(1, count + 1):
            name = b.wait_for(f"(() => {{ const m = document.body.innerText.match("
                              f"/^(.*) \\({i}\\/{count}\\)$/m); return m && m[1]; }})()")
            assert name in want, f"profile {i}: {name!r} is not a thread of the trace"
            seen.add(name)
            b.press("3")
            lines = settle(b, "document.body.innerText.includes('Symbol Name') &&"
                           " document.body.innerText.split('\\n')",
                           lambda got: [x.strip() for x in got or ()],
                           lambda got: {x for x in got if x in every_name} == want[name])
            assert {x for x in lines if x in every_name} == want[name], (name, lines)
            assert not [x for x in lines if x.startswith(tuple(n + " {" for n in every_name))], \
                (name, lines)
            if i == 1:
                b.screenshot(shot)
                artifact(shot, "speedscope-export.png")
            b.press("n")
            if i < count:
                assert b.wait_for(f"document.body.innerText.includes('({i + 1}/{count})')")
            b.press("1")
        assert seen == set(want)
        warnings = nesting_warnings(b)
        assert not warnings, warnings[:3]


def subcommands():
    """The subcommands tracer has, as `tracer help` lists them (main dispatches from that table)."""
    p = subprocess.run([lib.TRACER, "help"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    listing = p.stdout[p.stdout.index("Commands:\n"):]
    subs = re.findall(r"^  ([a-z-]+)  +\S", listing, re.M)
    assert "record" in subs and "report" in subs, p.stdout
    return subs


def help_options(*sub):
    """Long and short options in `tracer [SUB] --help`."""
    p = subprocess.run([lib.TRACER, *sub, "--help"], capture_output=True, text=True)
    assert p.returncode == 0, \
        f"tracer {' '.join(sub)} --help exits {p.returncode} (every command needs a usage " \
        f"text): {p.stderr.strip()}"
    opts = set()
    for line in p.stdout.splitlines():
        m = re.match(r"^ +(-([A-Za-z0-9]), )?(--[a-z0-9-]+)", line)
        if m:
            opts.add(m.group(3))
            if m.group(2):
                opts.add("-" + m.group(2))
    assert opts, f"no options in tracer {' '.join(sub)} --help"
    return opts


def complete(words, env=None):
    """What completion/tracer.bash offers for a command line whose last word is being typed
    (words split as bash splits them: '--pid=12' is '--pid', '=', '12')."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '
              'COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; _tracer; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    path = os.path.dirname(lib.TRACER) + os.pathsep + os.environ.get("PATH", "")
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash",
                        os.path.join(lib.ROOT, "completion", "tracer.bash"), *words],
                       capture_output=True, text=True,
                       env=dict(os.environ, PATH=path, **(env or {})))
    assert p.returncode == 0, p.stderr
    return [x for x in p.stdout.split("\n") if x]


@lib.offline
def test_bash_completion(tmp):
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                        'source "$1" && complete -p tracer ./tracer', "bash",
                        os.path.join(lib.ROOT, "completion", "tracer.bash")],
                       capture_output=True, text=True)
    # both the installed tracer and the ./tracer make leaves in the source tree
    assert p.returncode == 0 and p.stdout.split("\n")[:2] == [
        "complete -F _tracer tracer", "complete -F _tracer ./tracer"], p
    assert sorted(complete(["tracer", ""])) == sorted(subcommands())
    assert complete(["./tracer", "help", "mer"]) == ["merge"]
    assert complete(["tracer", "pa"]) == ["packs"]
    # options come from the usage texts, so every one of them completes
    assert set(complete(["tracer", "-"])) == help_options()
    assert set(complete(["tracer", "record", "--"])) == {o for o in help_options() if o[1] == "-"}
    for sub in subcommands():
        assert set(complete(["tracer", sub, "-"])) == help_options(sub), sub
    # -P: the packs of the packs folder, by name
    probes = os.path.join(lib.ROOT, "probes")
    packs = sorted(f[:-5] for f in os.listdir(probes) if f.endswith(".json"))
    assert sorted(complete(["tracer", "-P", ""], {"TRACER_PROBES": probes})) == packs
    assert complete(["tracer", "--pack", "=", "pip"], {"TRACER_PROBES": probes}) == ["pipeline"]
    # tracer -- COMMAND: commands
    assert "bash" in complete(["tracer", "-d", "5", "--", "bas"])
    # -u: the categories
    assert complete(["tracer", "-u", "op"]) == ["operator:"]
    # -o: files
    open(os.path.join(tmp, "run-trace.json"), "w").close()
    assert complete(["tracer", "-o", os.path.join(tmp, "run-")]) == [
        os.path.join(tmp, "run-trace.json")]
    # subcommands that read traces complete trace files; choices listed in a synopsis complete
    if "report" in subcommands():
        open(os.path.join(tmp, "run-notes.txt"), "w").close()
        assert complete(["tracer", "report", os.path.join(tmp, "run-")]) == [
            os.path.join(tmp, "run-trace.json")]
        assert complete(["tracer", "diff", "a.json", os.path.join(tmp, "run-")]) == [
            os.path.join(tmp, "run-trace.json")]
        synopsis = subprocess.run([lib.TRACER, "report", "--help"], capture_output=True,
                                  text=True).stdout
        m = re.search(r"\[--by ([a-z|]+)\]", synopsis)
        assert m and sorted(complete(["tracer", "report", "x.json", "--by", ""])) == sorted(
            m.group(1).split("|"))
    # -p: processes by pid (with their names when several match) or by name, after a comma
    name = f"zz{os.getpid() % 100000}"
    exe = os.path.join(tmp, name)
    shutil.copyfile("/bin/sleep", exe)
    os.chmod(exe, 0o755)
    proc = subprocess.Popen([exe, "60"])
    try:
        pid = str(proc.pid)
        assert complete(["tracer", "-p", name[:-1]]) == [pid]
        assert complete(["tracer", "-p", f"1,{name}"]) == [f"1,{pid}"]
        got = complete(["tracer", "--pid", "=", pid])
        assert got == [pid] or f"{pid} ({name})" in got, got
        every = complete(["tracer", "-p", ""])
        assert f"{pid} ({name})" in every and f"{os.getpid()} (python3)" in every
        assert not [c for c in every if c.startswith("2 (")], "kernel threads offered"
    finally:
        proc.kill()
        proc.wait()


def roff_text(path):
    """The man page's source with escapes for hyphens and fonts removed."""
    with open(path) as f:
        text = f.read()
    return re.sub(r"\\f[BIRP]|\\&", "", text.replace("\\-", "-"))


@lib.offline
def test_man_page(tmp):
    page = os.path.join(lib.ROOT, "doc", "tracer.1")
    need(shutil.which("groff"), "groff not installed: apt-get install groff-base")
    p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page], capture_output=True,
                       text=True)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    p = subprocess.run(["groff", "-man", "-Tutf8", "-P-c", page], capture_output=True, text=True)
    rendered = re.sub(".\x08", "", p.stdout)  # overstrike bold and underline
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "FILES",
                    "EXAMPLES"):
        assert re.search(rf"^{section}$", rendered, re.M), f"no {section} section"
    src = roff_text(page)
    # every subcommand is described, and every option of every usage text documented
    tags = re.findall(r"^\.TP\n(.*)$", src, re.M)
    for sub in subcommands():
        assert any(re.match(rf"\.BR? {sub}\b", t) for t in tags), f"no entry for {sub}"
    documented = set(re.findall(r"(?<![\w-])(--?[A-Za-z0-9][a-z0-9-]*)", src))
    offered = help_options()
    for sub in subcommands():
        offered |= help_options(sub)
    assert offered - documented == set(), f"undocumented options: {offered - documented}"
    # and nothing is documented that tracer does not have
    defined = set()
    for t in tags:
        defined |= set(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)", t))
    assert defined - offered == set(), f"documented but not in any --help: {defined - offered}"


def report_html(tmp, trace_path, *args):
    """Runs tracer report --html; returns (html text, the same report as --json)."""
    out = os.path.join(tmp, "report.html")
    p = subprocess.run([lib.TRACER, "report", trace_path, "--html", out, *args],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([lib.TRACER, "report", trace_path, "--json", *args], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        return out, f.read(), json.loads(p.stdout)


class _Fetches(html.parser.HTMLParser):
    """Collects whatever in a page would make a browser fetch something."""

    def __init__(self):
        super().__init__()
        self.found, self.in_style = [], False

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "link", "img", "iframe", "object", "embed", "video", "audio",
                   "source", "image", "use") and not (tag == "script" and "src" not in dict(attrs)):
            self.found.append(f"<{tag}>")
        for k, v in attrs:
            if k in ("src", "href", "srcset", "xlink:href", "poster", "data") or \
                    (v and "url(" in v):
                self.found.append(f"{tag} {k}={v}")
        self.in_style = tag == "style"

    def handle_endtag(self, tag):
        self.in_style = False

    def handle_data(self, data):
        if self.in_style and re.search(r"url\(|@import|@font-face", data):
            self.found.append("a stylesheet that loads")


def assert_self_contained(page):
    """Nothing to fetch: no script from a file, link, image, frame, CSS url() or import."""
    p = _Fetches()
    p.feed(page)
    p.close()
    assert p.found == [], f"the page loads something: {p.found[:5]}"


def page_facts(browser):
    """What the report page shows, read from its DOM and the SVG geometry Chromium laid out."""
    return browser.eval("""(() => {
        const stages = [...document.querySelectorAll('#stages g.stage')].map(g => ({
            name: g.dataset.stage,
            shares: Object.fromEntries([...g.querySelectorAll('rect')].map(
                r => [r.dataset.share, +r.dataset.value])),
            width: [...g.querySelectorAll('rect')].reduce((w, r) => w + r.getBBox().width, 0)}));
        const hists = [...document.querySelectorAll('svg.hist')].map(s => ({
            group: s.dataset.group, count: +s.dataset.count,
            bars: [...s.querySelectorAll('rect.bar')].reduce((n, r) => n + +r.dataset.count, 0),
            drawn: [...s.querySelectorAll('rect.bar')].every(r => r.getBBox().height >= 1)}));
        return {title: document.title, verdict: document.getElementById('verdict').textContent,
                text: document.body.innerText, stages, hists,
                scripts: [...document.scripts].filter(s => s.src).length,
                loaded: performance.getEntriesByType('resource').map(e => e.name)};
    })()""")


def test_html_report(tmp):
    need_chromium()
    path, trace = record(tmp, "--frames", "40", "--bottleneck", "decode")
    out, page, rep = report_html(tmp, path)
    assert_self_contained(page)
    shot = os.path.join(tmp, "report.png")
    with cdp.Browser(os.path.join(tmp, "chromium"), width=1000, height=900,
                     log=os.path.join(tmp, "chromium.log")) as b:
        b.open("file://" + out)
        assert b.wait_for("document.readyState === 'complete'")
        facts = page_facts(b)
        timeline = b.eval("window.tracerTimeline")
        b.screenshot(shot, full_page=True)
        artifact(shot, "report-pipeline.png")
    assert facts["loaded"] == [] and facts["scripts"] == 0, facts["loaded"]
    assert facts["verdict"] == rep["verdict"] and rep["verdict"].startswith("bottleneck: ")
    # one stacked bar per stage, its parts the stage's shares, filling the bar
    assert [s["name"] for s in facts["stages"]] == [s["stage"] for s in rep["stages"]]
    assert {"decode[*]", "op[*]", "reader", "writer"} <= {s["stage"] for s in rep["stages"]}
    keys = {"running": "running", "runnable": "runnable", "queue wait": "queue_wait",
            "blocked": "blocked", "idle": "idle"}
    for shown, want in zip(facts["stages"], rep["stages"]):
        for label, key in keys.items():
            assert abs(shown["shares"].get(label, 0) - want[key]) < 0.0006, (label, shown, want)
        if want["wall_ns"]:
            assert abs(shown["width"] - 700) < 1.5, shown
        assert want["stage"] in facts["text"]
    # a histogram per span name holding every span of it
    groups = rep["groups"][:20]
    assert [h["group"] for h in facts["hists"]] == [g["group"] for g in groups]
    for h, g in zip(facts["hists"], groups):
        assert h["count"] == h["bars"] == g["count"] and h["drawn"], (h, g)
    assert {"decode_frame", "Wait on Input Queue", "write_frame"} <= {h["group"] for h in
                                                                     facts["hists"]}
    # the timeline (tests/integration/test_timeline.py checks it in depth): a lane per thread,
    # each with its state strip, spans drawn on the pipeline's stages
    assert sorted(l["tid"] for l in timeline["lanes"]) == sorted(t["tid"] for t in rep["threads"])
    assert all(l["stateSegments"] > 0 for l in timeline["lanes"]), timeline
    assert sum(l["spanBoxes"] > 0 for l in timeline["lanes"]) >= 4, timeline


def test_html_report_escapes_names(tmp):
    """Names come from the traced program: markup in them is shown, never run or parsed."""
    need_chromium()
    path = os.path.join(tmp, "odd.json")
    name = '<img src=x onerror="alert(1)">&amp;'
    events = [{"ph": "M", "name": "process_name", "pid": 7, "tid": 7, "args": {"name": "p<7>"}},
              {"ph": "M", "name": "thread_name", "pid": 7, "tid": 8,
               "args": {"name": "<b>w</b>-0"}}]
    events += [{"ph": "X", "name": name, "cat": "operator", "ts": 10.0 * i, "dur": 2.0 + i,
                "pid": 7, "tid": 8} for i in range(1, 50)]
    with open(path, "w") as f:
        f.write('{"traceEvents":[\n' + ",\n".join(json.dumps(e) for e in events) +
                '\n],"metadata":{}}\n')
    out, page, rep = report_html(tmp, path)
    assert_self_contained(page)
    with cdp.Browser(os.path.join(tmp, "chromium"), log=os.path.join(tmp, "chromium.log")) as b:
        b.open("file://" + out)
        assert b.wait_for("document.readyState === 'complete'")
        facts = page_facts(b)
        images = b.eval("document.images.length")
    assert images == 0 and not b.dialogs and facts["scripts"] == 0
    assert [h["group"] for h in facts["hists"]] == [name]
    assert name in facts["text"] and "<b>w</b>" in facts["text"]
    assert facts["hists"][0]["count"] == 49


@lib.offline
def test_html_report_unwritable(tmp):
    path = os.path.join(tmp, "t.json")
    with open(path, "w") as f:
        f.write('{"traceEvents":[\n{"ph":"X","name":"a","cat":"io","ts":1.000,"dur":2.000,'
                '"pid":1,"tid":1}\n],"metadata":{}}\n')
    p = subprocess.run([lib.TRACER, "report", path, "--html", os.path.join(tmp, "no", "r.html")],
                       capture_output=True, text=True)
    assert p.returncode == 1, p
    lines = p.stderr.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("tracer: cannot write "), p.stderr
