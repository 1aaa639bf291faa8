"""tracer's offline commands on committed traces (tests/golden/), compared byte for byte with the
expected outputs next to them: report, export, merge, repair. Nothing is attached: they run
for any user. diff and export --speedscope too. tests/golden/update.sh regenerates the expected files (see its README)."""
import difflib
import os
import re
import shutil
import subprocess

import lib

# tracer's own version, which merge writes into the metadata: it changes with every release
VERSION = re.compile(r'"tracer_version":"\d[^"]*"')
EXPORTER = re.compile(r'"exporter":"tracer \d[^"]*"')


def golden(*parts):
    return os.path.join(lib.ROOT, "tests", "golden", *parts)


def run(*args, cwd):
    p = subprocess.run([lib.TRACER, *args], cwd=cwd, capture_output=True, text=True)
    assert p.returncode == 0, (args, p.stderr)
    return p.stdout


def normalised(text):
    text = EXPORTER.sub('"exporter":"tracer VERSION"', text)
    return VERSION.sub('"tracer_version":"VERSION"', text)


def same(got, name):
    with open(golden("expected", name)) as f:
        want = f.read()
    got, want = normalised(got), normalised(want)
    if got != want:
        diff = difflib.unified_diff(want.splitlines(), got.splitlines(), f"expected/{name}",
                                    "tracer", lineterm="", n=1)
        raise AssertionError(f"{name} differs (tests/golden/update.sh regenerates it):\n" +
                             "\n".join(list(diff)[:40]))


@lib.offline
def test_golden_report(tmp):
    here = golden()
    same(run("report", "pipeline.json", cwd=here), "report.txt")
    same(run("report", "pipeline.json", "--by", "stage", cwd=here), "report-stage.txt")
    same(run("report", "pipeline.json", "--by", "thread", "--top", "5", "--min-dur", "1ms",
             cwd=here), "report-thread.txt")
    same(run("report", "pipeline.json", "--csv", cwd=here), "report.csv")
    same(run("report", "pipeline.json", "--json", cwd=here), "report.json")


@lib.offline
def test_golden_export(tmp):
    same(run("export", "pipeline.json", "--jsonl", cwd=golden()), "export.jsonl")
    same(run("export", "pipeline.json", "--csv", cwd=golden()), "export.csv")
    same(run("export", "pipeline.json", "--speedscope", cwd=golden()), "export.speedscope.json")


@lib.offline
def test_golden_diff(tmp):
    same(run("diff", "host-a.json", "host-b.json", cwd=golden()), "diff.txt")
    same(run("diff", "host-a.json", "host-b.json", "--by", "stage", "--json", cwd=golden()),
         "diff-stage.json")


@lib.offline
def test_golden_merge(tmp):
    for name in ("host-a.json", "host-b.json"):
        shutil.copy(golden(name), tmp)
    run("merge", "host-a.json", "host-b.json", "-o", "merge.json", cwd=tmp)
    with open(os.path.join(tmp, "merge.json")) as f:
        text = f.read()
    same(text, "merge.json")
    trace, _ = lib.load_trace(os.path.join(tmp, "merge.json"))
    assert lib.check_format(trace, text) == []


@lib.offline
def test_golden_repair(tmp):
    cut = os.path.join(tmp, "cut.json")
    shutil.copy(golden("cut.json"), cut)
    run("repair", "cut.json", cwd=tmp)
    with open(cut) as f:
        same(f.read(), "repaired.json")
    # a second repair finds nothing to do and leaves the file as it is
    p = subprocess.run([lib.TRACER, "repair", cut], capture_output=True, text=True)
    assert p.returncode == 0 and "nothing to repair" in p.stderr, p.stderr
    with open(cut) as f:
        same(f.read(), "repaired.json")
