"""The README's two commands: they run as written as root in a shell with no sudo, and `make demo`
leaves the clone as clean as it found it; CI runs exactly the README's test command."""
import os
import re
import shutil
import subprocess
import tempfile

import lib


def readme_commands():
    text = open(os.path.join(lib.ROOT, "README.md")).read()
    block = re.search(r"```sh\n(.*?)```", text, re.S).group(1)
    cmds = [l.strip() for l in block.splitlines() if l.strip() and not l.startswith("#")]
    assert len(cmds) == 2, cmds
    return cmds


def path_without_sudo(tmp):
    """A PATH whose directories hold links to every command but sudo (a root shell without it)."""
    bin_dir = os.path.join(tmp, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    os.chmod(tmp, 0o755)  # an ordinary user runs from it too
    for d in os.environ.get("PATH", "/usr/bin:/bin").split(":") + ["/usr/sbin", "/sbin"]:
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            dst = os.path.join(bin_dir, name)
            if name != "sudo" and not os.path.lexists(dst):
                os.symlink(os.path.join(d, name), dst)
    assert shutil.which("sudo", path=bin_dir) is None
    return bin_dir


def git_status():
    return subprocess.run(["git", "-C", lib.ROOT, "status", "--porcelain", "--ignored=no"],
                          capture_output=True, text=True, check=True).stdout


@lib.offline
def test_readme_commands_need_no_sudo(tmp):
    demo, check = readme_commands()
    for cmd in (demo, check):
        assert "sudo" not in cmd.split(), cmd
    assert demo.endswith("make demo"), demo
    ci = open(os.path.join(lib.ROOT, ".ci", "run")).read().splitlines()
    assert check in [l.strip() for l in ci], f"{check!r} is not a line of .ci/run"


def test_demo_as_root_without_sudo_leaves_the_clone_clean(tmp):
    if shutil.which("git") is None or not os.path.isdir(os.path.join(lib.ROOT, ".git")):
        raise lib.Skip("not a git checkout")
    before = git_status()
    env = dict(os.environ, PATH=path_without_sudo(tmp), SECONDS_TO_RECORD="1",
               OUTPUT=lib.OUTPUT)
    # The README's command minus install-deps (which needs the network when something is missing);
    # its demo half runs as written.
    # twice: the second run keeps the first trace as pipeline-trace.json.old
    for _ in range(2):
        p = subprocess.run(["make", "--no-print-directory", "-o", "tracer", "demo",
                            f"OUTPUT={lib.OUTPUT}"], cwd=lib.ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "sample pipeline running" in p.stdout, p.stdout
        assert re.search(r"^Recorded [0-9.]+s: [1-9][0-9]* spans", p.stderr, re.M), p.stderr
        assert "STAGE" in p.stderr, p.stderr
        assert git_status() == before, f"make demo changed the tree:\n{git_status()}"
    assert os.path.exists(os.path.join(lib.ROOT, "pipeline-trace.json.old"))


def test_as_root_without_sudo_says_what_to_do(tmp):
    script = os.path.join(lib.ROOT, "scripts", "as-root.sh")
    env = dict(os.environ, PATH=path_without_sudo(tmp))
    ok = subprocess.run([script, "id", "-u"], env=env, capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.strip() == "0", ok
    # An ordinary user with no sudo gets one line saying what to do, and a failure.
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        script, "id", "-u"], env=env, capture_output=True, text=True)
    assert p.returncode != 0, p
    assert p.stderr.strip() == "id needs root (uprobes need CAP_SYS_ADMIN): run it as root " \
        "or install sudo", p.stderr


@lib.offline
def test_repo_stands_alone(tmp):
    """Nothing in the repository points at documents outside it (the design notes the project
    was started from live next to it, not in it), and every doc/ page the README links exists."""
    outside = re.compile(r"\.\./shared/|\bshared/(design|trace-format|style|targets|pipelines)\.md")
    bad = []
    for folder, dirs, files in os.walk(lib.ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("__pycache__",)]
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith((".png", ".gz", ".o")) or os.path.islink(path):
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            bad += [f"{os.path.relpath(path, lib.ROOT)}: {m.group(0)}"
                    for m in outside.finditer(text)]
    assert not bad, bad
    with open(os.path.join(lib.ROOT, "README.md")) as f:
        links = re.findall(r"\]\(((?:doc|probes|tests|bench)/[^)#]+)", f.read())
    assert "doc/trace-format.md" in links, links
    missing = [l for l in links if not os.path.exists(os.path.join(lib.ROOT, l))]
    assert not missing, missing


def walkthrough_blocks():
    text = open(os.path.join(lib.ROOT, "README.md")).read()
    section = text[text.index("## Walkthrough"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


@lib.offline
def test_walkthrough_needs_no_sudo_nor_install(tmp):
    """The walkthrough's commands run as written in a root shell with no sudo, and right after
    `make`: before, `sudo make install` and `sudo tracer -p $! ...` failed without sudo, and
    `tracer` was not on PATH after the quick start."""
    blocks = walkthrough_blocks()
    cmds = [l.split("#")[0].strip() for b in blocks for l in b.splitlines()]
    cmds = [c for c in cmds if c]
    assert len(blocks) >= 3 and any(c.startswith("./tracer -p $!") for c in cmds), cmds
    for c in cmds:
        words = c.split()
        assert "sudo" not in words, c
        assert "tracer" not in words, c  # ./tracer: the link make leaves
    text = open(os.path.join(lib.ROOT, "README.md")).read()
    assert "`./tracer report pipeline-trace.json --html report.html`" in text


def test_walkthrough_records_as_written_in_a_root_shell(tmp):
    """Its first recording, run as written by bash in a root shell that has no sudo."""
    if os.path.realpath(lib.OUTPUT) != os.path.realpath(os.path.join(lib.ROOT, ".output")):
        raise lib.Skip("./tracer links to .output/tracer: run with the default --output")
    block = next(b for b in walkthrough_blocks() if ".output/targets/pipeline --forever" in b)
    env = dict(os.environ, PATH=path_without_sudo(tmp))
    env.pop("TRACER_PROBES", None)  # ./tracer finds the packs of its tree by itself
    # the pipeline it starts in the background is stopped however the block ends
    p = subprocess.run(["bash", "-ec", "trap 'kill $! 2>/dev/null' EXIT\n" + block],
                       cwd=lib.ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "bottleneck: decode[*]" in p.stderr, p.stderr
    trace, _ = lib.load_trace(os.path.join(lib.ROOT, "pipeline-trace.json"))
    assert any(e["name"] == "decode_frame" for e in lib.spans(trace))


@lib.offline
def test_readme_says_what_make_check_costs(tmp):
    """`make check` builds the viewers (npm ci from the registry) and runs for minutes: the
    README's Tests section says both, so that nobody is surprised offline or in a hurry."""
    make = open(os.path.join(lib.ROOT, "Makefile")).read()
    bins = re.search(r"^test-bins:(.*)$", make, re.M).group(1).split()
    assert "viewers" in bins and re.search(r"^check: test-bins", make, re.M), bins
    text = open(os.path.join(lib.ROOT, "README.md")).read()
    tests = text[text.index("\n## Tests\n"):]
    tests = tests[:tests.index("\n## ", 1)]
    first = tests[:tests.index("\n\n", len("\n## Tests\n") + 1)]  # its first paragraph
    assert re.search(r"\b\d+ to \d+ minutes\b", first) and "npm" in first, first
