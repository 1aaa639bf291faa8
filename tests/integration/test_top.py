"""tracer top: the live view, in a pseudo-terminal of a given size (as over ssh) and piped."""
import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import termios
import time

import lib
from lib import start_pipeline, sigusr1, wait_probes_gone

ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def read_for(fd, seconds, until=None):
    """What the terminal shows within seconds (or until a pattern appears)."""
    out, end = b"", time.time() + seconds
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the other side closed
                break
            if not chunk:
                break
            out += chunk
            if until and re.search(until, out.decode("utf-8", "replace")):
                break
    return out.decode("utf-8", "replace")


def frames(text):
    """The frames drawn: each starts by moving the cursor home; lines without escapes."""
    parts = text.split("\x1b[H")[1:]
    return [[ESCAPE.sub("", l).rstrip("\r") for l in p.split("\n")] for p in parts]


def seconds(text):
    """A duration as top prints it (5.6s, 15.1ms, 201us, 800ns)."""
    number, unit = re.fullmatch(r"([\d.]+)(s|ms|us|ns)", text).groups()
    return float(number) * {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]


def start_top(rows, cols, *args, cwd):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    p = subprocess.Popen([lib.TRACER, "top", *map(str, args)], stdin=slave, stdout=slave,
                         stderr=subprocess.PIPE, cwd=cwd, start_new_session=True)
    os.close(slave)
    return p, master


def test_top_in_a_small_terminal(tmp):
    """In a 24x80 terminal: frames of at most 24 lines of at most 80 columns, redrawn every
    second with the stages, the verdict and the hottest spans; resized to 12x50, the frames
    fit that; q quits at once, the terminal is given back (alternate screen left), no file is
    written and the probes are gone."""
    pl, pid = start_pipeline("--forever", "--bottleneck", "decode")
    cwd = os.path.join(tmp, "cwd")
    os.mkdir(cwd)
    tr, master = start_top(24, 80, "-p", pid, "-P", "pipeline", cwd=cwd)
    sigusr1(pid)
    shown = read_for(master, 20, until=r"(?s)(\x1b\[H.*){4}")
    assert tr.poll() is None, tr.stderr.read().decode()
    tr.bpf_ids = lib.bpf_ids(tr.pid)
    assert tr.bpf_ids  # attached
    assert "\x1b[?1049h" in shown  # the alternate screen, as top takes it
    got = frames(shown)
    assert len(got) >= 3, shown[-2000:]
    last = got[-2]  # a whole frame: the last one may still be arriving
    for f in got[:-1]:
        assert len(f) <= 24, f
        assert all(len(l) <= 80 for l in f), [l for l in f if len(l) > 80]
    text = "\n".join(last)
    assert text.startswith("tracer top (q quits): pipeline, "), text
    assert re.search(r"^STAGE +THREADS", text, re.M), text
    assert re.search(r"^bottleneck: decode\[\*\] — busy", text, re.M), text
    header = next(l for l in last if l.lstrip().startswith("RATE/s"))
    rows = last[last.index(header) + 1:]
    names = [r.split()[-1] for r in rows if r.strip()]
    # the spans that take most self time lately come first: the decoders' work
    assert names and names[0] == "decode_frame", rows
    rate, self_pct, _, _, p50 = next(r for r in rows if r.endswith("  decode_frame")).split()[:5]
    # Two decoders, always inside decode_frame (the bottleneck): about 200% self time on any
    # machine, and the rate that time allows at the median frame: 4 ms frames, about 500 a
    # second, when each decoder has a CPU; on a loaded machine they spin to a deadline for
    # longer (15 ms and 128 a second with two busy loops beside them).
    share = float(self_pct.rstrip("%")) / 100
    assert 1.5 < share <= 2.05, rows
    assert 0.6 < float(rate) * seconds(p50) / share < 1.6, rows
    # the window shrinks (a resized ssh session): the next frames fit the new size
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 12, 50, 0, 0))
    read_for(master, 1.2)  # a frame may be drawn for the old size meanwhile
    small = frames(read_for(master, 10, until=r"(?s)(\x1b\[H.*){3}"))
    assert len(small) >= 2
    for f in small[:-1]:
        assert len(f) <= 12 and all(len(l) <= 50 for l in f), f
    os.write(master, b"q")
    rc = tr.wait(timeout=10)
    after = read_for(master, 1)
    os.close(master)
    assert rc == 0, tr.stderr.read().decode()
    assert "\x1b[?1049l" in after or "\x1b[?1049l" in shown
    assert os.listdir(cwd) == []  # writes nothing without -o
    assert wait_probes_gone(tr)
    pl.send_signal(signal.SIGINT)
    assert pl.wait(timeout=30) == 0


def test_top_piped_and_to_a_file(tmp):
    """Piped, frames follow one another with whole lines; with -o the trace is written too."""
    pl, pid = start_pipeline("--forever", "--bottleneck", "operator")
    out = os.path.join(tmp, "top.json")
    sigusr1(pid)
    p = subprocess.run([lib.TRACER, "top", "-p", str(pid), "-P", "pipeline", "-d", "3.5",
                        "-o", out], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout  # no escapes into a file or a pipe
    frames_ = [f for f in p.stdout.split("tracer top: ")[1:]]
    assert 3 <= len(frames_) <= 5, p.stdout
    assert "bottleneck: op[*]" in frames_[-1], frames_[-1]
    assert f"wrote {out}" in p.stderr
    trace, text = lib.load_trace(out)
    assert lib.check_format(trace, text) == []
    assert any(e["name"] == "op_infer" for e in lib.spans(trace))
    pl.send_signal(signal.SIGINT)
    assert pl.wait(timeout=30) == 0


def test_top_header_comm_never_raw(tmp):
    """The header names the target by its comm, which the target chooses (here its file name,
    with ESC, BEL and a bidi override): shown with U+FFFD in their place, piped as on a terminal."""
    exe = os.path.join(tmp, "pl\x1b]0;x\x07\u202e")
    shutil.copy(lib.target("pipeline"), exe)
    pl = subprocess.Popen([exe, "--wait-signal", "--forever"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    lib._procs.append(pl)
    line = pl.stdout.readline().split()
    assert line and line[0] == "ready", line
    sigusr1(pl.pid)
    p = subprocess.run([lib.TRACER, "top", "-p", str(pl.pid), "-u", "decode:pl*:decode_frame",
                        "-d", "2.5"], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    hidden = re.findall(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", out)
    assert not hidden, sorted(set(hidden))
    assert "tracer top: pl\ufffd]0;x\ufffd\ufffd, 1 function" in out, out[:300]
    pl.send_signal(signal.SIGINT)
    assert pl.wait(timeout=30) == 0
