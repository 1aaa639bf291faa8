"""`make install PREFIX=P`: the installed tracer finds the packs installed beside it
(P/share/tracer/probes, found from its own path) and records with them."""
import os
import subprocess

import lib
from lib import finish_tracer, load_trace, sigusr1, spans, start_pipeline, wait_exit


def test_installed_tracer_finds_its_packs(tmp):
    """Before, probe_pack__dir() called dirname() twice on one buffer: the second candidate
    became P/../share/tracer/probes and the installed tracer fell back to /usr/local."""
    prefix = os.path.join(tmp, "prefix")
    p = subprocess.run(["make", "-s", "-C", lib.ROOT, f"OUTPUT={lib.OUTPUT}", "install",
                        f"PREFIX={prefix}"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    exe = os.path.join(prefix, "bin", "tracer")
    probes = os.path.join(prefix, "share", "tracer", "probes")
    env = {k: v for k, v in os.environ.items() if k != "TRACER_PROBES"}
    p = subprocess.run([exe, "packs"], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"packs in {probes}\n"), p.stdout
    assert "pipeline" in p.stdout, p.stdout
    out = os.path.join(tmp, "t.json")
    pl, pid = start_pipeline("--frames", "20")
    tr = subprocess.Popen([exe, "-p", str(pid), "-P", "pipeline", "-o", out],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lib._procs.append(tr)
    tr.stderr_lines = [wait_for_recording(tr)]
    sigusr1(pid)
    assert wait_exit(pl)[0] == 0
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    assert "cannot read the probe packs" not in err, err
    names = {e["name"] for e in spans(load_trace(out)[0])}
    assert "decode_frame" in names, sorted(names)


def wait_for_recording(p):
    """Reads stderr up to the "recording" line (tracer runs until the target exits)."""
    seen = ""
    while True:
        line = p.stderr.readline()
        assert line, f"tracer did not start recording: {seen}"
        seen += line
        if "recording" in line:
            return seen
