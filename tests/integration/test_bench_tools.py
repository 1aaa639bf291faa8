"""What `make bench` relies on, checked for correctness (never for speed): the loop target's
probed functions start with the instructions their names promise, the empty-program floor, the
least span program and tracer count exactly the calls the target made, with nothing lost at a
moderate rate, the writer benchmark writes a valid trace, and the harness reads metadata as a
JSON parser does."""
import importlib.util
import os
import signal
import subprocess
import sys
import time

import lib
from lib import check_format, finish_tracer, load_trace, spans, start_tracer


def bench_tool(name):
    path = os.path.join(lib.OUTPUT, "bench", name)
    assert os.access(path, os.X_OK), f"{path} is missing: build it with `make test-bins`"
    return path


class Loop:
    def __init__(self, *args):
        self.p = subprocess.Popen([bench_tool("loop"), "-w"] + [str(a) for a in args],
                                  stdout=subprocess.PIPE, text=True)
        lib._procs.append(self.p)
        w = self.p.stdout.readline().split()
        assert w and w[0] == "ready", w
        self.pid, self.addr = int(w[1]), int(w[2], 16)
        self.orig = self.code(16)

    def code(self, n):
        with open(f"/proc/{self.pid}/mem", "rb", buffering=0) as f:
            f.seek(self.addr)
            return f.read(n)

    def wait_probed(self):
        deadline = time.monotonic() + 10
        while self.code(16) == self.orig:  # a probe: on the first instruction, or moved
            assert time.monotonic() < deadline, "no probe showed up at the function"
            time.sleep(0.01)

    def run(self):
        os.kill(self.pid, signal.SIGUSR1)
        out, _ = self.p.communicate(timeout=120)
        assert self.p.returncode == 0, out
        last = out.split("\n")[-2].split()
        assert last[:2] == ["total", "calls"], out
        return int(last[2])


def test_loop_first_instructions(tmp):
    want = {
        "bench_push": bytes([0x55]),
        "bench_step": bytes([0x48, 0x83, 0xec, 0x08]),
        "bench_nop": bytes([0x90]),
        "bench_nopl": bytes([0x0f, 0x1f, 0x00]),
        "bench_nop5": bytes([0x0f, 0x1f, 0x44, 0x00, 0x00]),
        "bench_endbr": bytes([0xf3, 0x0f, 0x1e, 0xfa]),
        "bench_endbr_push": bytes([0xf3, 0x0f, 0x1e, 0xfa, 0x55]),
        "bench_test_jcc": bytes([0x40, 0xf6, 0xc7, 0x01, 0x74]),
    }
    for func, code in want.items():
        loop = Loop("-f", func, "-n", 1)
        assert loop.code(len(code)) == code, (func, loop.code(len(code)).hex())
        assert loop.run() == 1


def run_floor(env=None, mode="-c"):
    loop = Loop("-f", "bench_push", "-t", 2, "-n", 20000)
    floor = subprocess.Popen([bench_tool("floor"), "-p", str(loop.pid), "-f", "bench_push", mode],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, **env) if env else None)
    lib._procs.append(floor)
    line = floor.stderr.readline()
    assert "recording" in line, line + floor.stderr.read()
    loop.wait_probed()
    assert loop.run() == 40000
    out, err = floor.communicate(timeout=60)
    assert floor.returncode == 0, err
    return line, out.split()


def test_floor_counts_every_call(tmp):
    line, w = run_floor()
    assert "uprobe_multi" in line, line
    assert w == ["entry_hits", "40000", "return_hits", "40000"], w


def test_floor_counts_every_call_perf_uprobes(tmp):
    line, w = run_floor({"TRACER_NO_UPROBE_MULTI": "1"})
    assert "uprobe per function" in line, line
    assert w == ["entry_hits", "40000", "return_hits", "40000"], w


def test_least_span_program_records_every_call(tmp):
    """floor -s, the least span program: a record in its ring for each call of both threads,
    all read (rows 1 and 6 measure tracer against it)."""
    line, w = run_floor(mode="-s")
    assert "uprobe_multi" in line, line
    assert w == ["spans", "40000"], w


def test_floor_on_the_sites_tracer_attached(tmp):
    """Row 8's floor: the sites read from a trace's metadata (frameworks.floor_sites), given by
    file offset (-o: entry and return probes, -u: a plain uprobe), in every process that maps
    the object (-a, as tracer's --follow probes): a second loop's calls count too."""
    sys.path.insert(0, os.path.join(lib.ROOT, "bench"))
    import frameworks
    _, trace, _ = record_loop(tmp, "bench_push", 1, 1000, 20000)
    sites = frameworks.floor_sites(trace["metadata"])
    site = trace["metadata"]["probes"][0].get("site_offset",
                                              trace["metadata"]["probes"][0]["offset"])
    assert sites == {"loop": ([site], [])}, sites
    a, other = Loop("-f", "bench_push", "-t", 2, "-n", 20000), Loop("-f", "bench_push", "-n", 10000)
    floor = subprocess.Popen([bench_tool("floor"), "-p", str(a.pid), "-x", bench_tool("loop"),
                              "-o", str(site), "-u", hex(site), "-a", "-c"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lib._procs.append(floor)
    line = floor.stderr.readline()
    assert "attached 2 probes" in line, line + floor.stderr.read()
    a.wait_probed()
    other.wait_probed()
    assert other.run() == 10000 and a.run() == 40000
    out, err = floor.communicate(timeout=60)
    assert floor.returncode == 0, err
    # each call: the entry of -o and the plain uprobe of -u on the same instruction, one return
    assert out.split() == ["entry_hits", "100000", "return_hits", "50000"], out


def record_loop(tmp, func, threads, calls, rate):
    out = os.path.join(tmp, f"{func}.json")
    loop = Loop("-f", func, "-t", threads, "-n", calls, "-r", rate)
    # no overhead budget: the loop's calls are all it does
    p = start_tracer("-p", loop.pid, "-u", f"other:loop:{func}", "--max-overhead", "0", "-o", out)
    loop.wait_probed()
    assert loop.run() == threads * calls
    status, err = finish_tracer(p)
    assert status == 0, err
    trace, text = load_trace(out)
    return out, trace, text


def test_tracer_records_every_loop_call(tmp):
    """Both threads at 100k calls/s in all: every call is one span, none lost."""
    out, trace, text = record_loop(tmp, "bench_push", 2, 50000, 100000)
    assert check_format(trace, text) == []
    counts = trace["metadata"]["counts"]
    assert counts["spans"] == 100000 and counts["lost_spans"] == 0, counts
    xs = [e for e in spans(trace) if e["name"] == "bench_push"]
    assert len(xs) == 100000
    assert len({e["tid"] for e in xs}) == 2


def test_tracer_records_single_stepped_site(tmp):
    out, trace, text = record_loop(tmp, "bench_step", 1, 5000, 20000)
    counts = trace["metadata"]["counts"]
    assert counts["spans"] == 5000 and counts["lost_spans"] == 0, counts
    assert len([e for e in spans(trace) if e["name"] == "bench_step"]) == 5000


def test_harness_reads_metadata_from_the_tail(tmp):
    spec = importlib.util.spec_from_file_location("bench", os.path.join(lib.ROOT, "bench",
                                                                         "bench.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out, trace, _ = record_loop(tmp, "bench_push", 1, 1000, 100000)
    assert bench.trace_metadata(out) == trace["metadata"]


def test_writer_bench_writes_valid_traces(tmp):
    for name in ("w.json", "w.json.gz"):
        path = os.path.join(tmp, name)
        p = subprocess.run([bench_tool("writer_bench"), "-n", "20000", path], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        w = p.stdout.split()
        assert w[:2] == ["events", "20000"] and w[6] == "bytes", w
        assert int(w[7]) == os.path.getsize(path)
        trace, text = load_trace(path)
        assert check_format(trace, text) == []
        assert len(spans(trace)) == 20000


def test_overhead_accounting_counts_loop_calls(tmp):
    """tracer's own overhead accounting: every call is one entry and one return hit on a site of
    the right kind, the calibration ran, and the share is the total over the target's CPU."""
    out, trace, _ = record_loop(tmp, "bench_push", 2, 20000, 100000)
    o = trace["metadata"]["overhead"]
    assert o["entry_hits"] == {"emulated": 40000, "optimized": 0, "single-stepped": 0}, o
    assert o["return_hits"] == 40000 and o["bpf_runs"] == 80000, o
    assert o["calibration"]["ok"] and o["calibration"]["attach"] == "uprobe_multi", o
    assert o["bpf_ns"] > 0 and o["trap_entry_ns"] > 0 and o["trap_return_ns"] > 0, o
    assert abs(o["total_ns"] - (o["bpf_ns"] + o["trap_entry_ns"] + o["trap_return_ns"])) <= 2, o
    if o["target_cpu_ns"]:
        assert abs(o["share_of_target_cpu"] - o["total_ns"] / o["target_cpu_ns"]) < 1e-6, o
    out, trace, _ = record_loop(tmp, "bench_step", 1, 2000, 20000)
    o = trace["metadata"]["overhead"]
    assert o["entry_hits"] == {"emulated": 0, "optimized": 0, "single-stepped": 2000}, o
    out, trace, _ = record_loop(tmp, "bench_nop5", 1, 2000, 20000)
    assert trace["metadata"]["overhead"]["entry_hits"]["optimized"] == 2000
