"""The README's "Trace your pipeline" guides, run as written: each stack's commands on its
example program, the names the guide says appear checked in the HTML report they produce, and
the report rendered in headless Chromium into the screenshot the README shows
(OUTPUT/artifacts/guide-STACK.png; with TRACER_UPDATE_GUIDES=1, `make guide-images`, into
doc/images/ as well)."""
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
        b.screenshot(shot)
    folder = os.path.join(lib.OUTPUT, "artifacts")
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(shot, os.path.join(folder, os.path.basename(shot)))
    if os.environ.get("TRACER_UPDATE_GUIDES"):
        shutil.copyfile(shot, os.path.join(lib.ROOT, image))
    # what the guide says appears is in the report of this run
    missing = [n for n in names if n not in shown]
    assert not missing, f"the {stack} guide names {missing}, absent from its report"
    assert "bottleneck:" in shown
    # the README shows an image of it, a PNG the renderer made
    with open(os.path.join(lib.ROOT, image), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", image


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
