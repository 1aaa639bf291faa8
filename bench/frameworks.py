"""Row 8 of bench/bench.py: the default packs on the framework pipelines of the README's
guides (PyTorch with DataLoader workers, OpenCV, GStreamer), traced by pid with no probe options,
against the same pipelines untraced. b is the harness (bench.py): its helpers and settings."""
import os
import shutil
import time


def pipelines(b):
    """(stack, command, tracer options besides -p): the guides' example pipelines."""
    targets = os.path.join(b.ROOT, "tests", "targets")
    return [
        ("PyTorch DataLoader (pytorch, python packs)",
         [b.PYTHON, os.path.join(targets, "py_torch_loader.py"), "120"], ["--follow"]),
        ("OpenCV (opencv, ffmpeg, python packs)",
         [b.PYTHON, os.path.join(targets, "py_opencv.py"), "--frames", "400"], []),
        ("GStreamer (gstreamer pack)",
         ["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=6000", "!",
          "video/x-raw,width=640,height=480", "!", "videoconvert", "!",
          "video/x-raw,format=I420", "!", "videoscale", "!", "video/x-raw,width=320,height=240",
          "!", "queue", "!", "fakesink", "sync=false"], []),
    ]


def framework_run(b, cmd, tracer_args=None, out=None):
    """The command's CPU time (its own and its waited-for children's) and wall time; traced by
    tracer attached to it right after it starts (the packs are picked as it loads libraries),
    with tracer's own account of what it cost. Returns (cpu_s, wall_s, share or None)."""
    t0 = time.monotonic()
    target = b.Proc(cmd)
    tr = None
    if tracer_args is not None:
        tr = b.Proc([b.TRACER, "-p", str(target.pid), "--max-overhead", "0", "-o", out] +
                    tracer_args)
    target.wait(600)
    wall = time.monotonic() - t0
    share = None
    if tr:
        if tr.wait(120) != 0:
            raise RuntimeError(f"tracer failed: {tr.text()[-1500:]}")
        share = b.trace_metadata(out)["overhead"]["share_of_target_cpu"]
    if target.status != 0:
        raise RuntimeError(f"{cmd[0]} exited {target.status}")
    return target.cpu_s(), wall, share


def run(b):
    b.log("8. default packs on framework pipelines")
    sec = "8. default packs, framework pipelines"
    out = os.path.join(b.TMP, "fw.json")
    for what, cmd, args in pipelines(b):
        if not shutil.which(cmd[0]) and not os.access(cmd[0], os.X_OK):
            b.row(sec, what, "not run", "", "", "", f"no {cmd[0]}")
            continue
        base, traced, shares = [], [], []
        for _ in range(2 if b.QUICK else 3):
            base.append(framework_run(b, cmd))
            traced.append(framework_run(b, cmd, args, out))
            shares.append(100.0 * traced[-1][2])
        bc, tc = b.med([x[0] for x in base]), b.med([t[0] for t in traced])
        bw, tw = b.med([x[1] for x in base]), b.med([t[1] for t in traced])
        b.row(sec, what, f"CPU {tc:.2f} s, wall {tw:.2f} s traced; tracer's account: "
            f"{b.med(shares):.2f}% of the target's CPU (runs {min(shares):.2f}-"
            f"{max(shares):.2f})", f"CPU {bc:.2f} s, wall {bw:.2f} s untraced",
            f"CPU {tc / bc:.3f}x, wall {tw / bw:.3f}x", "a few %", "")
