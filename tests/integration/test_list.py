"""`tracer list` and `tracer packs`: probe-able functions per object with the cost class of their
first instruction and the packs that probe them, C++ names demangled, the packs themselves."""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import lib
from lib import _procs, sigusr1, start_pipeline, wait_exit

ROW_RE = re.compile(r"^  ( *[0-9a-f]+)  (emulated|optimized|single-stepped)( \+\d+)? *  (\S+) +"
                    r"(\S.*)$")


def run(*args):
    """Runs tracer with the packs of this source tree; returns (status, stdout, stderr)."""
    env = dict(os.environ, TRACER_PROBES=os.path.join(lib.ROOT, "probes"))
    p = subprocess.run([lib.TRACER] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=120, env=env)
    return p.returncode, p.stdout, p.stderr


def parse_list(out):
    """{object basename: {"path": path, "rows": [(offset, class, cost, function, packs, site)]}},
    and the column where FUNCTION starts on each row (they must all agree). site: how far past
    the function's start its probes go, with what they moved past or why they stay."""
    objs, cur, cols = {}, None, set()
    for line in out.splitlines():
        if not line:
            continue
        if not line.startswith(" ") and "  /" in line:
            base, path = line.split("  ", 1)
            cur = objs.setdefault(base, {"path": path, "rows": [], "notes": []})
            continue
        m = ROW_RE.match(line)
        if m and cur is not None:
            rest = m.group(5)
            packs = []
            pm = re.search(r"  \[([^\]]+)\]$", rest)
            if pm:
                packs = pm.group(1).split(",")
                rest = rest[:pm.start()]
            site = (int(m.group(3)[2:]) if m.group(3) else 0, None)
            sm = re.search(r"  \((past|stays:) ([^)]+)\)$", rest)
            if sm:
                site = (site[0], sm.group(0).strip())
                rest = rest[:sm.start()]
            cur["rows"].append((int(m.group(1), 16), m.group(2), m.group(4), rest, packs, site))
            cols.add(m.start(5))
        elif cur is not None and line.startswith("  ") and "FUNCTION" not in line:
            cur["notes"].append(line.strip())
    return objs, cols


def rows_named(objs, name):
    return [r for o in objs.values() for r in o["rows"] if r[3] == name]


def one_line(err):
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, f"want one line, got: {err!r}"
    assert lines[0].startswith("tracer: "), lines[0]
    return lines[0]


@lib.offline
def test_list_pipeline_binary(tmp):
    rc, out, err = run("list", lib.target("pipeline"))
    assert rc == 0, err
    objs, cols = parse_list(out)
    assert list(objs) == ["pipeline"], out
    assert objs["pipeline"]["path"] == lib.target("pipeline")
    assert len(cols) == 1, f"FUNCTION column not aligned: {cols}"
    (row,) = rows_named(objs, "decode_frame")
    assert row[1] == "emulated" and row[2] == "0.7us", row
    assert row[4] == ["pipeline:decode"], row
    (row,) = rows_named(objs, "queue_pop")
    assert row[4] == ["pipeline:queue"], row
    # functions no pack names are listed too, with no pack
    (row,) = rows_named(objs, "reader_main")
    assert row[4] == [], row
    # offsets are the symbols' file offsets (the binary is a PIE linked at 0)
    nm = subprocess.run(["nm", lib.target("pipeline")], capture_output=True, text=True).stdout
    addr = {w[2]: int(w[0], 16) for w in (l.split() for l in nm.splitlines()) if len(w) == 3}
    assert rows_named(objs, "decode_frame")[0][0] == addr["decode_frame"]
    assert "packs used with no -u/-P: pipeline" in out
    assert max(len(l) for l in out.splitlines()) <= 100, out

    rc, out, err = run("list", lib.target("pipeline"), "op_*")
    assert rc == 0, err
    objs, _ = parse_list(out)
    assert sorted(r[3] for r in objs["pipeline"]["rows"]) == ["op_infer", "op_normalize",
                                                              "op_resize"]


def test_list_running_pipeline(tmp):
    pl, pid = start_pipeline("--frames", "1")
    rc, out, err = run("list", "-p", pid, "decode_*")
    assert rc == 0, err
    objs, _ = parse_list(out)
    assert list(objs) == ["pipeline"], out
    (row,) = rows_named(objs, "decode_frame")
    assert row[1] == "emulated" and row[4] == ["pipeline:decode"], row
    assert out.startswith(f"pid {pid} (pipeline): "), out
    assert "packs used with no -u/-P: pipeline" in out
    # without a pattern: every object it maps, libc among them with the glibc pack's waits
    rc, out, err = run("list", "-p", pid)
    assert rc == 0, err
    objs, cols = parse_list(out)
    assert "pipeline" in objs and "libc.so.6" in objs, list(objs)
    assert len(cols) == 1, cols
    waits = [r for r in objs["libc.so.6"]["rows"] if r[3] == "pthread_cond_wait"]
    # two versions at two addresses, both probed by the glibc pack
    assert len(waits) == 2 and len({r[0] for r in waits}) == 2, waits
    assert all(r[4] == ["glibc:queue"] for r in waits), waits
    sigusr1(pid)
    rc, _, _ = wait_exit(pl)
    assert rc == 0


def make_input(tmp):
    path = os.path.join(tmp, "in.mp4")
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc=duration=2:size=320x240:rate=30", "-c:v", "libx264", "-preset",
                    "veryfast", "-g", "30", "-pix_fmt", "yuv420p", path], check=True, timeout=120)
    return path


@lib.offline
def test_list_ffmpeg(tmp):
    assert shutil.which("ffmpeg"), "ffmpeg is not installed (scripts/install-deps.sh installs it)"
    src = make_input(tmp)
    ff = subprocess.Popen(["ffmpeg", "-nostdin", "-loglevel", "error", "-re", "-stream_loop",
                           "-1", "-i", src, "-vf", "scale=320:240", "-f", "null", "-"])
    _procs.append(ff)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # until it has mapped its libraries
        with open(f"/proc/{ff.pid}/maps") as f:
            if "libswscale" in f.read():
                break
        time.sleep(0.1)
    rc, out, err = run("list", "-p", ff.pid, "avcodec_send_packet")
    assert rc == 0, err
    objs, _ = parse_list(out)
    (row,) = rows_named(objs, "avcodec_send_packet")
    assert row[4] == ["ffmpeg:decode"] and row[1] == "emulated", row
    assert re.match(r"libavcodec\.so\.\d+", [b for b, o in objs.items() if o["rows"]][0])
    assert "packs used with no -u/-P: ffmpeg" in out

    # every function of the ffmpeg pack exists in Debian's ffmpeg libraries and is marked
    rc, out, err = run("list", "-p", ff.pid)
    assert rc == 0, err
    objs, _ = parse_list(out)
    with open(os.path.join(lib.ROOT, "probes", "ffmpeg.json")) as f:
        pack = json.load(f)
    for p in pack["probes"]:
        rows = rows_named(objs, p["function"])
        assert rows, f"{p['function']} is not in ffmpeg's libraries"
        assert all(f"ffmpeg:{p['category']}" in r[4] for r in rows), rows
        assert all(r[1] != "single-stepped" for r in rows), f"{p['function']} is single-stepped"
        lib_path = [o["path"] for o in objs.values() if any(r in o["rows"] for r in rows)][0]
        nm = subprocess.run(["nm", "-D", "--defined-only", lib_path], capture_output=True,
                            text=True).stdout
        assert re.search(rf" T {p['function']}(@|$)", nm, re.M), (p["function"], lib_path)
    ff.kill()
    ff.wait()


@lib.offline
def test_list_cxx_demangled(tmp):
    exe = lib.target("cxx_ops")
    rc, out, err = run("list", exe, "onnx::*::Compute")
    assert rc == 0, err
    objs, _ = parse_list(out)
    names = sorted(r[3] for r in objs["cxx_ops"]["rows"])
    assert names == ["onnx::Conv::Compute(onnx::Context&)",
                     "onnx::Relu::Compute(onnx::Context&)",
                     "onnx::SoftmaxKernel::Compute(onnx::Context&)",
                     "onnx::math::MatMul::Compute(onnx::Context&)"], names
    assert all(r[1] == "emulated" for r in objs["cxx_ops"]["rows"])
    # the full demangled name, and the mangled one, match too
    for pattern in ("onnx::Conv::Compute(onnx::Context&)", "_ZN4onnx4Conv7Compute*",
                    "onnx::Conv*::Compute"):
        rc, out, err = run("list", exe, pattern)
        assert rc == 0, (pattern, err)
        objs, _ = parse_list(out)
        assert [r[3] for r in objs["cxx_ops"]["rows"]] == ["onnx::Conv::Compute(onnx::Context&)"]
    # a template: listed with its return type, matched without it
    rc, out, err = run("list", exe, "onnx::math::Softmax*")
    assert rc == 0, err
    objs, _ = parse_list(out)
    assert [r[3] for r in objs["cxx_ops"]["rows"]] == [
        "double onnx::math::Softmax<double>(onnx::Context&, double)"]
    # the whole listing shows no mangled name of the program's own classes
    rc, out, err = run("list", exe)
    assert rc == 0, err
    assert "_ZN4onnx" not in out and "onnx::Graph::Run(onnx::Context&)" in out


@lib.offline
def test_list_go_binary(tmp):
    rc, out, err = run("list", os.path.join(lib.OUTPUT, "fixtures", "fix_go_note"))
    assert rc == 0, err
    assert "a Go binary: probes are entry-only" in out, out


def test_packs(tmp):
    rc, out, err = run("packs")
    assert rc == 0, err
    names = [l.split()[0] for l in out.splitlines()[1:] if l.startswith("  ") and
             not l.startswith("    ")]
    probes = os.environ["TRACER_PROBES"]
    assert names == sorted(f[:-5] for f in os.listdir(probes) if f.endswith(".json")), out
    assert {"ffmpeg", "glibc", "opencv", "pipeline", "python"} <= set(names), out
    assert "only with -P glibc" in out
    assert "used when it maps libavcodec.so.*" in out
    assert max(len(l) for l in out.splitlines()) <= 100, out
    pl, pid = start_pipeline("--frames", "1")
    rc, out, err = run("packs", "-p", pid)
    assert rc == 0, err
    marked = [l.split()[1] for l in out.splitlines() if l.startswith("* ")]
    assert marked == ["pipeline"], out
    sigusr1(pid)
    wait_exit(pl)


HIDDEN_RE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                       r"\u2066-\u2069]")


@lib.offline
def test_list_names_never_raw(tmp):
    """`tracer list BINARY` needs no root: a binary anyone hands it, with ESC, BEL, a C1 CSI and
    a bidi override in a symbol name, must not drive the terminal; U+FFFD in their place."""
    evil = "d\x1b]0;X\x07\u009b\u202e"
    with open(lib.target("pipeline"), "rb") as f:
        data = f.read()
    assert len(evil.encode()) == len("decode_frame") and b"\0decode_frame\0" in data
    path = os.path.join(tmp, "pipeline")
    with open(path, "wb") as f:
        f.write(data.replace(b"\0decode_frame\0", b"\0" + evil.encode() + b"\0"))
    os.chmod(path, 0o755)
    rc, out, err = run("list", path)
    assert rc == 0, err
    assert not HIDDEN_RE.findall(out), sorted(set(HIDDEN_RE.findall(out)))
    objs, _ = parse_list(out)
    assert rows_named(objs, "d\ufffd]0;X" + "\ufffd" * 3), out
    rc, out, err = run("list", path, "d?]0;X*")  # matched by the symbol's own bytes
    assert rc == 0 and rows_named(parse_list(out)[0], "d\ufffd]0;X" + "\ufffd" * 3), (out, err)


def test_packs_text_never_raw(tmp):
    """A pack's name, description and library globs reach the terminal under the same rule, in
    `tracer packs`, in the packs `tracer list` names, and in a recording's summary."""
    with open(os.path.join(tmp, "evil.json"), "w") as f:
        json.dump({"name": "ev\x1b[31mil\x07", "description": "x\x1b]0;pwned\x07 \u009b2J "
                   "\u202etxt.exe", "when": {"maps": ["lib\x1b[2J.so", "pipeline"]},
                   "probes": [{"function": "decode_frame", "category": "decode"}]}, f)
    pl, pid = start_pipeline("--frames", "1")
    for args in (["packs"], ["packs", "-p", pid]):
        p = subprocess.run([lib.TRACER] + [str(a) for a in args], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ, TRACER_PROBES=tmp))
        assert p.returncode == 0, p.stderr
        assert not HIDDEN_RE.findall(p.stdout), sorted(set(HIDDEN_RE.findall(p.stdout)))
        assert "ev\ufffd[31mil\ufffd" in p.stdout and "lib\ufffd[2J.so" in p.stdout, p.stdout
        assert "x\ufffd]0;pwned\ufffd \ufffd2J \ufffdtxt.exe" in p.stdout, p.stdout
    p = subprocess.run([lib.TRACER, "list", lib.target("pipeline"), "decode_frame"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, TRACER_PROBES=tmp))
    assert p.returncode == 0, p.stderr
    assert not HIDDEN_RE.findall(p.stdout), sorted(set(HIDDEN_RE.findall(p.stdout)))
    assert "packs used with no -u/-P: ev\ufffd[31mil\ufffd\n" in p.stdout, p.stdout
    assert "[ev\ufffd[31mil\ufffd:decode]" in p.stdout, p.stdout
    p = subprocess.run([lib.TRACER, "-o", os.path.join(tmp, "t.json"), "--",
                        lib.target("pipeline"), "--frames", "3"], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, TRACER_PROBES=tmp))
    assert p.returncode == 0, p.stderr
    assert not HIDDEN_RE.findall(p.stderr), sorted(set(HIDDEN_RE.findall(p.stderr)))
    assert "packs: ev\ufffd[31mil\ufffd, picked for" in p.stderr, p.stderr
    sigusr1(pid)
    wait_exit(pl)


def test_list_other_users_process(tmp):
    """`tracer list -p` as a user on root's process: it cannot read the maps, and says so and
    what to do (not that the process is a kernel thread)."""
    p = subprocess.Popen(["sleep", "60"])
    _procs.append(p)
    q = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        lib.TRACER, "list", "-p", str(p.pid)], capture_output=True, text=True,
                       timeout=60)
    assert q.returncode == 1, q
    line = one_line(q.stderr)
    assert f"cannot read the executable and maps of pid {p.pid} (sleep): permission denied; " \
        "run as root (sudo)" in line, line
    assert "kernel thread" not in line
    rc, out, err = run("list", "-p", 2)  # kthreadd: a kernel thread is still named so
    assert rc == 1 and "is a kernel thread" in one_line(err), err


@lib.offline
def test_list_errors(tmp):
    notelf = os.path.join(tmp, "notes.txt")
    with open(notelf, "w") as f:
        f.write("not an ELF file\n")
    cases = [
        (["list"], 2, "give -p PID or a BINARY"),
        (["list", "-p", "abc"], 2, "bad pid 'abc'"),
        (["list", "-p", "1", "a", "b"], 2, "unexpected argument 'b'"),
        (["list", "--bogus"], 2, "unknown option '--bogus'"),
        (["packs", "extra"], 2, "unexpected argument 'extra'"),
        (["list", "-p", "4000000"], 1, "no process with pid 4000000"),
        (["packs", "-p", "4000000"], 1, "no process with pid 4000000"),
        (["list", os.path.join(tmp, "nosuch")], 1, "no such file"),
        (["list", notelf], 1, "not an ELF file"),
        (["list", tmp], 1, "not a regular file"),
        (["list", lib.target("pipeline"), "decode_frme"], 1, "did you mean: decode_frame"),
        (["list", lib.target("pipeline"), "zzzz*"], 1, "run without a PATTERN"),
    ]
    for args, status, want in cases:
        rc, out, err = run(*args)
        assert rc == status, (args, rc, err)
        assert want in one_line(err), (args, err)
        assert out == "", (args, out)


def test_record_cxx_demangled(tmp):
    """`-u` globs match demangled C++ names, and spans are named by them (needs resolve.c to
    match with demangle__match)."""
    p = subprocess.Popen([lib.target("cxx_ops"), "--wait-signal", "--iterations", "0", "--us",
                          "200"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _procs.append(p)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", line
    pid = int(line[1])
    out = os.path.join(tmp, "cxx.json")
    tr = lib.start_tracer("-p", pid, "-d", "1", "-o", out, "-u",
                          "operator:*:onnx::Conv*::Compute", "-u",
                          "operator:cxx_ops:onnx::math::*::Compute(onnx::Context&)",
                          env={"TRACER_PROBES": os.path.join(lib.ROOT, "probes")})
    sigusr1(pid)
    rc, err = lib.finish_tracer(tr)
    assert rc == 0, err
    trace, text = lib.load_trace(out)
    assert lib.check_format(trace, text) == []
    counts = {}
    for e in lib.spans(trace):
        counts[e["name"]] = counts.get(e["name"], 0) + 1
    assert set(counts) == {"onnx::Conv::Compute", "onnx::math::MatMul::Compute"}, counts
    # one call of each per iteration of the graph
    assert counts["onnx::Conv::Compute"] > 100, counts
    assert abs(counts["onnx::Conv::Compute"] - counts["onnx::math::MatMul::Compute"]) <= 2
    probes = {pr["function"] for pr in trace["metadata"]["probes"]}
    assert probes == {"_ZN4onnx4Conv7ComputeERNS_7ContextE",
                      "_ZN4onnx4math6MatMul7ComputeERNS_7ContextE"}, probes
    p.send_signal(signal.SIGINT)
    rc, _, err = wait_exit(p)
    assert rc == 0 and "Compute calls" in err, err
