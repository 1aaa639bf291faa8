"""The README's "Trace your pipeline" guides, run as written: each stack's commands on its
example program, the names the guide says appear checked in the HTML report they produce, and
the report rendered in headless Chromium into the screenshot the README shows
(OUTPUT/artifacts/guide-STACK.png; with TRACER_UPDATE_GUIDES=1, `make guide-images`, into
doc/images/ as well).

Beside each image, doc/images/guide-STACK.json says what it shows: the stages and the span
names the report draws (numbers and pids aside). Each run compares what the code draws now
with it, so that a picture cannot drift from the code (a stage or a probe gone, or new): when
they differ, `make guide-images` draws both again."""
import json
import os
import re
import shutil
import subprocess
import sys

import lib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "viewers"))
import cdp  # noqa: E402

TITLES = {"pytorch": "PyTorch with DataLoader workers", "opencv": "OpenCV",
          "gstreamer": "GStreamer", "ffmpeg": "ffmpeg", "python": "Plain Python"}


def guide(title):
    """(commands, names the guide says appear, image) of one stack's guide in the README."""
    with open(os.path.join(lib.ROOT, "README.md")) as f:
        readme = f.read()
    part = readme[readme.index("## Trace your pipeline"):]
    part = part[:part.index("\n## ", 3)]
    text = part[part.index(f"### {title}\n"):]
    text = text[:text.find("\n### ", 4)] if "\n### " in text[4:] else text
    commands = re.search(r"```sh\n(.*?)```", text, re.S).group(1).strip().split("\n")
    appears = text[text.index("What appears"):text.index("![")]
    names = re.findall(r"`([^`]+)`", appears)
    image = re.search(r"!\[[^]]*\]\((doc/images/[^)]+)\)", text).group(1)
    return commands, names, image


def run_guide(tmp, stack):
    commands, names, image = guide(TITLES[stack])
    assert len(commands) == 2 and commands[1].startswith("./tracer report "), commands
    for cmd in commands:
        argv = cmd.split()
        assert argv[0] == "./tracer", cmd
        argv = [lib.TRACER] + [os.path.join(lib.ROOT, a) if a.startswith("tests/") else a
                               for a in argv[1:]]
        p = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, (cmd, p.stderr[-2000:])
    html = os.path.join(tmp, commands[1].split()[-1])
    shot = os.path.join(tmp, f"guide-{stack}.png")
    with cdp.Browser(os.path.join(tmp, "chromium"), width=1100, height=1000,
                     log=os.path.join(tmp, "chromium.log")) as b:
        b.open("file://" + html)
        assert b.wait_for("document.readyState === 'complete'")
        shown = b.eval("document.body.innerText")
        drawn = b.eval("""(() => ({
            stages: [...document.querySelectorAll('#stages g.stage')].map(g => g.dataset.stage),
            spans: [...document.querySelectorAll('svg.hist')].map(s => s.dataset.group)}))()""")
        b.screenshot(shot)
    trace = os.path.join(tmp, commands[0].split()[commands[0].split().index("-o") + 1])
    p = subprocess.run([lib.TRACER, "report", trace, "--json", "--top", "0"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    groups = json.loads(p.stdout)["groups"]
    category = {g["group"]: g["category"] for g in groups}
    total = {g["group"]: g["total_ns"] for g in groups}
    # the names the picture is about: a probe's spans with a good share of the probes' time
    # (which rare operators a run calls, aten::item or aten::detach, varies from run to run, and
    # so do small shares)
    native = sum(t for n, t in total.items() if category[n] != "python") or 1
    share = {n: total.get(n, 0) / native for n in drawn["spans"] if category.get(n) != "python"}
    drawn["spans"] = [n for n, x in share.items() if x >= MAJOR]
    folder = os.path.join(lib.OUTPUT, "artifacts")
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(shot, os.path.join(folder, os.path.basename(shot)))
    what = structure(image, drawn)
    with open(os.path.join(folder, f"guide-{stack}.json"), "w") as f:
        f.write(what)
    sidecar = os.path.join(lib.ROOT, image[:-len(".png")] + ".json")
    if os.environ.get("TRACER_UPDATE_GUIDES"):
        shutil.copyfile(shot, os.path.join(lib.ROOT, image))
        with open(sidecar, "w") as f:
            f.write(what)
    with open(sidecar) as f:
        committed = f.read()
    # stale: a stage that changed, a major span of the image no longer drawn, or one drawn now
    # with a clearly major share that the image lacks (between the two: run-to-run noise)
    old = json.loads(committed)
    now = json.loads(what)
    now["spans"] = [n for n in old["spans"] if n in share] + \
        [n for n, x in share.items() if x >= CLEARLY_MAJOR and n not in old["spans"]]
    # a thread with only its process's name (OpenCV's pool thread: python3) joins the stage it
    # works for or stands apart depending on how busy a loaded machine leaves that stage
    unnamed = process_names(trace)
    now["stages"] = [n for n in now["stages"] if n in old["stages"] or n not in unnamed]
    now = json.dumps(dict(now, spans=sorted(now["spans"]), stages=sorted(now["stages"])),
                     indent=1) + "\n"
    assert committed == now, f"{image} is stale: it shows {stale(committed, now)}; " \
        "`make guide-images` draws it again (review, then commit the image and its .json)"
    # what the guide says appears is in the report of this run
    missing = [n for n in names if n not in shown]
    assert not missing, f"the {stack} guide names {missing}, absent from its report"
    assert "bottleneck:" in shown
    # the README shows an image of it, a PNG the renderer made
    with open(os.path.join(lib.ROOT, image), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", image


MAJOR, CLEARLY_MAJOR = 0.05, 0.15  # of the probes' span time


def process_names(trace):
    """The names of the trace's processes (process_name metadata)."""
    names = set()
    with open(trace) as f:
        for e in json.load(f)["traceEvents"]:
            if e.get("ph") == "M" and e.get("name") == "process_name":
                names.add(e["args"]["name"])
    return names


def structure(image, drawn):
    """What a guide's image shows, as its .json keeps it: stage names (without the pid or tid
    that tells apart stages of one name: which get one varies, gst-launch's first run starts a
    plugin scanner) and the names of the spans the probes make with 5% of their time or more, each
    sorted (not the Python functions: which of those a stack read catches varies from run to
    run)."""
    stages = sorted({re.sub(r" (pid|tid) \d+$", "", n) for n in drawn["stages"]})
    return json.dumps({"image": os.path.basename(image), "stages": stages,
                       "spans": sorted(set(drawn["spans"]))}, indent=1) + "\n"


def stale(committed, now):
    """"stage X, no longer drawn; span Y, drawn now but not in the image" ..."""
    old, new = json.loads(committed), json.loads(now)
    out = []
    for key in ("stages", "spans"):
        out += [f"{key[:-1]} {n!r}, no longer drawn" for n in old[key] if n not in new[key]]
        out += [f"no {key[:-1]} {n!r}, drawn now" for n in new[key] if n not in old[key]]
    return "; ".join(out)


def test_guide_pytorch(tmp):
    run_guide(tmp, "pytorch")


def test_guide_opencv(tmp):
    run_guide(tmp, "opencv")


def test_guide_gstreamer(tmp):
    run_guide(tmp, "gstreamer")


def test_guide_ffmpeg(tmp):
    run_guide(tmp, "ffmpeg")


def test_guide_python(tmp):
    run_guide(tmp, "python")
