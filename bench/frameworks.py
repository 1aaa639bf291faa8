"""Row 8 of bench/bench.py: the default packs on the framework pipelines of the README's
guides (PyTorch with DataLoader workers, OpenCV, GStreamer video and audio), traced by pid with
no probe options (--max-overhead 0), against the same pipelines untraced. Measured as row 6 is
(bench/ffmpeg_overhead.py): interleaved rounds, untraced and traced alternating (which goes
first alternating too), so that drift in the machine's load falls on both; each pipeline held
at its start (before its work: SIGUSR1 starts the Python targets, SIGSTOP/SIGCONT holds
gst-launch once it maps its libraries) while tracer attaches, so that both runs measure the
same work; per round the ratio of the traced run's CPU time (the target's and its waited-for
children's, from wait4) to the untraced one's, and of their pace (untraced wall time over
traced: 1 is no slower); the mean ratio with a 95% interval over the rounds. Besides, what
tracer's summary claims the probes cost, as the rise in CPU time it implies, against the rise
measured. b is the harness (bench.py)."""
import os
import shutil
import signal
import subprocess
import time

from ffmpeg_overhead import mean_ci

SEC = "8. default packs, framework pipelines"
GST_AUDIO = ["audiotestsrc", "num-buffers=30000", "!", "audioconvert", "!", "audioresample", "!",
             "vorbisenc", "!", "oggmux", "!", "filesink"]


def pipelines(b):
    """(stack, command, tracer options besides -p, how it is held: 'signal' for a target that
    prints "ready PID" and starts on SIGUSR1, else the library to wait for before SIGSTOP)."""
    targets = os.path.join(b.ROOT, "tests", "targets")
    return [
        ("PyTorch DataLoader (pytorch, python packs)",
         [b.PYTHON, os.path.join(targets, "py_torch_loader.py"), "200", "--wait-signal"],
         ["--follow"], "signal"),
        ("OpenCV (opencv, ffmpeg, python packs)",
         [b.PYTHON, os.path.join(targets, "py_opencv.py"), "--frames", "1500", "--wait-signal"],
         [], "signal"),
        ("GStreamer video (gstreamer pack)",
         ["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=8000", "!",
          "video/x-raw,width=640,height=480", "!", "videoconvert", "!",
          "video/x-raw,format=I420", "!", "videoscale", "!", "video/x-raw,width=320,height=240",
          "!", "queue", "!", "fakesink", "sync=false"], [], "libgstvideo"),
        ("GStreamer audio: audiotestsrc ! audioconvert ! audioresample ! vorbisenc ! oggmux ! "
         "filesink (gstreamer pack)",
         ["gst-launch-1.0", "-q"] + GST_AUDIO + [f"location={os.path.join(b.TMP, 'a.ogg')}"],
         [], "libvorbisenc"),
    ]


def held(b, cmd, hold):
    """The target started and held before its work."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE if hold == "signal" else subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, text=True)
    if hold == "signal":
        line = p.stdout.readline().split()
        if not line or line[0] != "ready":
            p.kill()
            p.wait()
            raise RuntimeError(f"{cmd[1]} did not start: {line}")
    else:
        b.wait_maps(p.pid, hold, 30)
        os.kill(p.pid, signal.SIGSTOP)
    return p


def run_once(b, cmd, args, hold, traced):
    """One run: (CPU seconds, wall seconds) of the target from its start, and tracer's
    overhead metadata (with its own CPU seconds as "tracer_cpu_s") if traced."""
    out = os.path.join(b.TMP, "fw.json")
    p = held(b, cmd, hold)
    tr = None
    try:
        cpu0 = b.cpu_of(p.pid)
        if traced:
            tr = b.Proc([b.TRACER, "-p", str(p.pid), "--max-overhead", "0", "-o", out] + args)
            tr.wait_ready()
        else:
            time.sleep(0.3)
        t0 = time.monotonic()
        os.kill(p.pid, signal.SIGUSR1 if hold == "signal" else signal.SIGCONT)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            raise RuntimeError(f"{os.path.basename(cmd[1] if hold == 'signal' else cmd[0])} "
                               f"exited {p.returncode}")
        meta = None
        if tr:
            if tr.wait(120) != 0:
                raise RuntimeError(f"tracer failed: {tr.text()[-1500:]}")
            meta = b.trace_metadata(out)["overhead"]
            meta["tracer_cpu_s"] = tr.cpu_s()
        return ru.ru_utime + ru.ru_stime - cpu0, wall, meta
    finally:
        if p.returncode is None and p.poll() is None:
            p.kill()
            p.wait()
        if tr:
            tr.kill()


def measure(b, cmd, args, hold, rounds):
    """Per round: CPU ratio, pace ratio, the rise tracer claims, tracer's own CPU time over the
    target's; and the untraced CPU times."""
    cpu, pace, claim, own, base = [], [], [], [], []
    for i in range(rounds):
        got = {}
        for traced in ((False, True) if i % 2 == 0 else (True, False)):
            got[traced] = run_once(b, cmd, args, hold, traced)
        (bc, bw, _), (tc, tw, meta) = got[False], got[True]
        base.append(bc)
        cpu.append(tc / bc)
        pace.append(bw / tw)
        # the claim, as the rise in CPU time it implies: charged / (the target's CPU less it)
        rise = meta["total_ns"] / max(1, meta["target_cpu_ns"] - meta["total_ns"])
        claim.append(rise)
        own.append(meta["tracer_cpu_s"] / tc)
    return cpu, pace, claim, own, base


def run(b):
    b.log(SEC)
    rounds = 6 if b.QUICK else 12
    for what, cmd, args, hold in pipelines(b):
        exe = cmd[0]
        if not shutil.which(exe) and not os.access(exe, os.X_OK):
            b.row(SEC, what, "not run", "", "", "", f"no {exe}")
            continue
        cpu, pace, claim, own, base = measure(b, cmd, args, hold, rounds)
        cm, chw = mean_ci(cpu)
        pm, phw = mean_ci(pace)
        om, ohw = mean_ci(claim)
        b.row(SEC, f"{what}: {rounds} interleaved rounds",
              f"CPU {100 * (cm - 1):+.1f}% (95% CI {100 * (cm - 1 - chw):+.1f}% to "
              f"{100 * (cm - 1 + chw):+.1f}%), pace {pm:.3f} (95% CI {pm - phw:.3f} to "
              f"{pm + phw:.3f}); tracer's summary claims {100 * om:+.1f}% "
              f"(+-{100 * ohw:.1f}), {100 * (om - (cm - 1)):+.1f} points from the measure; "
              f"tracer's own CPU {100 * b.med(own):.0f}% of the target's",
              f"untraced {b.med(base):.2f} s CPU (runs {min(base):.2f}-{max(base):.2f})",
              f"CPU x{cm:.3f} +- {chw:.3f}, pace x{pm:.3f} +- {phw:.3f}",
              "CPU <= +3%, pace >= 0.97, claim within 2 points",
              "met" if cm - 1 <= 0.03 and pm >= 0.97 and abs(om - (cm - 1)) <= 0.02
              else "NOT met")
