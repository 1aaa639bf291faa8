"""A real pipeline from Debian's packages: ffmpeg decoding and scaling in real time."""
import os
import shutil
import signal
import subprocess
import time

import lib
from lib import (check_format, finish_tracer, load_trace, sched_lines, spans, start_tracer,
                 wait_probes_gone, _procs)


def make_input(tmp):
    path = os.path.join(tmp, "in.mp4")
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc=duration=4:size=320x240:rate=30", "-c:v", "libx264", "-preset",
                    "veryfast", "-g", "30", "-pix_fmt", "yuv420p", path], check=True, timeout=120)
    return path


def test_ffmpeg_decode_and_scale_spans(tmp):
    assert shutil.which("ffmpeg"), "ffmpeg is not installed (scripts/install-deps.sh installs it)"
    src = make_input(tmp)
    ff = subprocess.Popen(["ffmpeg", "-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1",
                           "-i", src, "-vf", "scale=160:120", "-f", "null", "-"])
    _procs.append(ff)
    time.sleep(1.0)  # let it map its libraries and start its threads
    out = os.path.join(tmp, "ff.json")
    tr = start_tracer("-p", ff.pid, "-d", "3", "-o", out,
                      "-u", "decode:libavcodec.so.*:avcodec_send_packet",
                      "-u", "decode:libavcodec.so.*:avcodec_receive_frame",
                      "-u", "operator:libswscale.so.*:sws_scale_frame")
    rc, err = finish_tracer(tr, timeout=60)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    by_name = {}
    for e in spans(trace):
        assert e["pid"] == ff.pid
        by_name.setdefault(e["name"], []).append(e)
    # 30 frames/s for 3 s: one packet and one scaled frame per frame
    assert 45 <= len(by_name.get("avcodec_send_packet", [])) <= 200, len(by_name.get("avcodec_send_packet", []))
    assert 45 <= len(by_name.get("sws_scale_frame", [])) <= 200
    assert by_name.get("avcodec_receive_frame")
    assert {e["cat"] for e in by_name["sws_scale_frame"]} == {"operator"}
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names[ff.pid] == "ffmpeg"
    # ffmpeg's H.264 frame threads show up in the scheduler view
    assert len({s["prev"] for s in sched_lines(trace)} & set(names)) >= 3
    assert wait_probes_gone(tr)
    assert ff.poll() is None, "ffmpeg died"
    ff.send_signal(signal.SIGINT)
    ff.wait(timeout=30)


def test_ffmpeg_cpu_bound_verdict(tmp):
    """One ffmpeg thread decodes flat out (-threads 1, no -re) beside four idle namesakes: the
    verdict names that thread ("ffmpeg tid N"), never "none" from an average of five threads."""
    src = make_input(tmp)
    ff = subprocess.Popen(["ffmpeg", "-nostdin", "-loglevel", "error", "-stream_loop", "-1",
                           "-threads", "1", "-i", src, "-vf", "scale=160:120", "-f", "null", "-"])
    _procs.append(ff)
    time.sleep(1.0)
    out = os.path.join(tmp, "ff.json")
    tr = start_tracer("-p", ff.pid, "-d", "2", "-o", out)
    rc, err = finish_tracer(tr, timeout=60)
    assert rc == 0, err
    verdict = next(l for l in err.splitlines() if l.startswith("bottleneck:"))
    assert verdict.startswith("bottleneck: ffmpeg tid "), verdict
    busy = int(verdict.split("busy ")[1].split("%")[0])
    assert busy >= 60, verdict  # saturated (the rest: waits for a CPU, other processes)
    # the same file, the same verdict
    p = subprocess.run([lib.TRACER, "report", out], capture_output=True, text=True, timeout=60)
    assert verdict.split(" —")[0] in p.stdout, p.stdout
    ff.send_signal(signal.SIGINT)
    ff.wait(timeout=30)


def test_ffmpeg_default_threads_same_verdict(tmp):
    """ffmpeg decoding flat out with its default threads, recorded four times by pid: the
    same bottleneck each time. Its decoding thread's busy share (running or waiting for a
    CPU) varies from run to run around 60% on a loaded machine, the rest waiting for its frame
    threads; it was "none" (averaged with its seven namesakes) or "ffmpeg tid N" by which side
    of the saturation cutoff it fell (test_stages:test_ffmpeg_runs_agree has measured runs)."""
    src = make_input(tmp)
    ff = subprocess.Popen(["ffmpeg", "-nostdin", "-loglevel", "error", "-stream_loop", "-1",
                           "-i", src, "-vf", "scale=160:120", "-f", "null", "-"])
    _procs.append(ff)
    time.sleep(1.0)
    heads = []
    for i in range(4):
        rc, err = lib.run_tracer("-p", ff.pid, "-d", "1.5", "-o", os.path.join(tmp, f"{i}.json"))
        assert rc == 0, err
        verdict = next(l for l in err.splitlines() if l.startswith("bottleneck:"))
        heads.append(verdict.split(" —")[0])
    assert heads == [f"bottleneck: ffmpeg tid {ff.pid}"] * 4, heads
    # the file read back says the same
    p = subprocess.run([lib.TRACER, "report", os.path.join(tmp, "3.json")], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    again = [l for l in p.stdout.splitlines() if l.startswith("bottleneck:")]
    assert len(again) == 1 and again[0].startswith(heads[-1] + " — "), (again, verdict)
    ff.send_signal(signal.SIGINT)
    ff.wait(timeout=30)
