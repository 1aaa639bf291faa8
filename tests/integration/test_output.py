"""The trace file: created safely, handed to the invoking user, valid whatever stops the
recording (disk full, SIGKILL + tracer repair)."""
import json
import re
import os
import signal
import subprocess
import time

import lib
from lib import (check_format, finish_tracer, load_trace, run_tracer, sigusr1,
                 start_pipeline, start_tracer, wait_exit)


def test_sigkill_then_repair(tmp):
    out = os.path.join(tmp, "k.json")
    pl, pid = start_pipeline("--forever", "--bottleneck", "none")
    sigusr1(pid)
    tr = start_tracer("-p", pid, "-P", "pipeline", "-o", out)
    time.sleep(2)
    tr.kill()
    tr.wait()
    with open(out) as f:
        text = f.read()
    complete = [l for l in text.split("\n")[1:] if l.endswith("},")]
    assert len(complete) > 100
    try:
        json.loads(text)
        raise AssertionError("a killed recording should be cut short")
    except ValueError:
        pass
    rc, err = run_tracer("repair", out)
    assert rc == 0 and "repaired" in err, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    meta = trace["metadata"]
    assert meta["repaired"] is True
    # every complete event line was kept, plus the closing instant
    assert len(trace["traceEvents"]) == len(complete) + 1
    # what the file's first event said is in the metadata: the zero, the version, the command
    # line, the CPUs; report counts the machine's CPUs, not only those whose lines were kept
    first = trace["traceEvents"][0]
    assert first["name"] == "recording started" and first["ts"] == 0, first
    assert meta["t0_monotonic_ns"] == first["args"]["t0_monotonic_ns"] > 0
    assert meta["tracer_version"] and "-P pipeline" in meta["command_line"], meta
    assert meta["cpus"] == os.cpu_count() and meta["duration_ns"] > 1e9, meta
    p = subprocess.run([lib.TRACER, "report", out], capture_output=True, text=True)
    n = os.cpu_count()
    assert f", {n} CPU{'s' if n > 1 else ''}\n" in p.stdout.split("\n")[0] + "\n", p.stdout
    rc, err = run_tracer("repair", out)
    assert rc == 0 and "nothing to repair" in err
    # the target ran on unharmed
    assert lib.alive(pid)
    pl.send_signal(signal.SIGINT)
    assert wait_exit(pl)[0] == 0


def test_sigkill_at_start_then_repair(tmp):
    """The file holds its first line and the "recording started" event before anything is
    attached: killed as soon as it says "recording" (nothing else written yet), it was 0 bytes
    and `tracer repair` refused it; now repair makes it a valid trace that says what ran."""
    for out in (os.path.join(tmp, "k.json"), os.path.join(tmp, "k.json.gz")):
        pl, pid = start_pipeline("--frames", "5")
        tr = start_tracer("-p", pid, "-P", "pipeline", "-o", out)
        tr.kill()
        tr.wait()
        assert os.path.getsize(out) > 0, out
        rc, err = run_tracer("repair", out)
        assert rc == 0 and "repaired" in err, err
        trace, text = load_trace(out)
        events = trace["traceEvents"]
        assert [e["name"] for e in events[:1] + events[-1:]] == \
            ["recording started", "recording stopped"], events
        assert "-P pipeline" in trace["metadata"]["command_line"], trace["metadata"]
        sigusr1(pid)
        assert wait_exit(pl)[0] == 0


def test_output_file_safety(tmp):
    pl, pid = start_pipeline("--frames", "5")
    target = os.path.join(tmp, "victim")
    with open(target, "w") as f:
        f.write("precious\n")
    link = os.path.join(tmp, "link.json")
    os.symlink(target, link)
    rc, err = run_tracer("-p", pid, "-P", "pipeline", "-o", link)
    assert rc == 1 and "symbolic link" in err, err
    other = os.path.join(tmp, "other.json")
    with open(other, "w") as f:
        f.write("someone else's\n")
    os.chown(other, 65534, 65534)
    rc, err = run_tracer("-p", pid, "-P", "pipeline", "-o", other)
    assert rc == 1 and "belongs to another user" in err, err
    with open(target) as f:
        assert f.read() == "precious\n"
    with open(other) as f:
        assert f.read() == "someone else's\n"
    # through sudo, the trace belongs to the user who asked for it, readable by them only
    out = os.path.join(tmp, "mine.json")
    tr = start_tracer("-p", pid, "-P", "pipeline", "-o", out,
                      env={"SUDO_UID": "65534", "SUDO_GID": "65534"})
    sigusr1(pid)
    wait_exit(pl)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    st = os.stat(out)
    assert (st.st_uid, st.st_gid) == (65534, 65534) and st.st_mode & 0o777 == 0o600


def test_output_to_stdout(tmp):
    """-o - writes the trace to standard output; messages and the summary stay on stderr."""
    pl, pid = start_pipeline("--frames", "5")
    p = start_tracer("-p", pid, "-P", "pipeline", "-d", "1", "-o", "-")
    sigusr1(pid)
    out, err = p.communicate(timeout=60)
    err = "".join(p.stderr_lines) + err
    assert p.returncode == 0, err
    assert not os.path.exists("-")
    trace = json.loads(out)
    assert lib.check_format(trace, out) == []
    assert {s["name"] for s in lib.spans(trace)} >= {"decode_frame", "read_packet"}
    assert "wrote the trace to standard output" in err, err
    wait_exit(pl)
    # launch mode: the command's own output goes to stderr, not into the trace
    p = subprocess.run([lib.TRACER, "-P", "pipeline", "-o", "-", "--",
                        lib.target("pipeline"), "--frames", "8"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    trace = json.loads(p.stdout)
    assert len([s for s in lib.spans(trace) if s["name"] == "decode_frame"]) == 8
    assert "pipeline: 8 frames written" in p.stderr, p.stderr


def test_existing_output_kept_as_old(tmp):
    """As perf keeps perf.data.old: a second recording to the same file keeps the first."""
    out = os.path.join(tmp, "run.json")
    for frames in ("3", "5"):
        rc, err = run_tracer("-P", "pipeline", "-o", out, "--", lib.target("pipeline"),
                             "--frames", frames)
        assert rc == 0, err
    assert f"kept the previous {out} as {out}.old" in err, err
    first, second = lib.load_trace(out + ".old")[0], lib.load_trace(out)[0]
    count = lambda t: len([s for s in lib.spans(t) if s["name"] == "decode_frame"])
    assert (count(first), count(second)) == (3, 5)
    # an .old that is not the user's own regular file is left alone, and nothing is written
    os.remove(out + ".old")
    os.mkdir(out + ".old")
    rc, err = run_tracer("-P", "pipeline", "-o", out, "--", lib.target("pipeline"),
                         "--frames", "2")
    assert rc == 1 and "run.json.old exists and is not a regular file" in err, err
    assert count(lib.load_trace(out)[0]) == 5


def test_counts_are_grammatical(tmp):
    """One of a thing is singular, in the live messages, the summary and the report."""
    out = os.path.join(tmp, "one.json")
    rc, err = run_tracer("-u", "decode:pipeline:decode_frame", "--no-sched", "-o", out, "--",
                         lib.target("pipeline"), "--frames", "1", "--decoders", "1")
    assert rc == 0, err
    assert "recording 1 function in 1 process" in err, err
    assert re.search(r"^Recorded [0-9.]+m?s: 1 span from [0-9]+ threads", err, re.M), err
    p = subprocess.run([lib.TRACER, "report", out], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert f"{out}: 1 span on " in p.stdout, p.stdout


def test_output_path_not_through_others_links(tmp):
    """As root without sudo: -o through a directory symlink that another user planted in a
    sticky world-writable directory must not clobber root's file; nor a hard-linked target."""
    pl, pid = start_pipeline("--frames", "5")
    sticky = os.path.join(tmp, "sticky")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    private = os.path.join(tmp, "private")
    os.mkdir(private, 0o700)
    victim = os.path.join(private, "victim.json")
    with open(victim, "w") as f:
        f.write("precious\n")
    evil = os.path.join(sticky, "evil")
    os.symlink(private, evil)
    os.lchown(evil, 65534, 65534)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    p = subprocess.run([lib.TRACER, "-p", str(pid), "-P", "pipeline", "-d", "0.2", "-o",
                        os.path.join(evil, "victim.json")], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 1 and f"{evil} is a symbolic link of another user (uid 65534)" in \
        p.stderr, p.stderr
    # a link of root's own is followed as before
    mine = os.path.join(sticky, "mine")
    os.symlink(private, mine)
    rc, err = run_tracer("-p", pid, "-P", "pipeline", "-d", "0.2", "-o",
                         os.path.join(mine, "new.json"))
    assert rc == 0 and os.path.exists(os.path.join(private, "new.json")), err
    hard = os.path.join(tmp, "hard.json")
    os.link(victim, hard)
    rc, err = run_tracer("-p", pid, "-P", "pipeline", "-d", "0.2", "-o", hard)
    assert rc == 1 and "has other hard links" in err, err
    with open(victim) as f:
        assert f.read() == "precious\n"
    assert sorted(os.listdir(private)) == ["new.json", "victim.json"]
    sigusr1(pid)
    wait_exit(pl)
