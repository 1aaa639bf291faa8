"""The summary's overhead claim against what tracing measurably costs a target. The probe traps
are calibrated on a hot loop (record/overhead_cal.c); a target that works through its caches
between hits pays more a hit, and must be charged that: here the target sweeps a buffer the
L2's size before each call of its probed function, and measures what a call costs probed and
not (tests/targets/cache_sweep.c)."""
import re
import statistics
import subprocess

import lib
from lib import load_trace, target

CALLS = 6000  # of each function: about 0.2 s of CPU time in all


def traced(tmp):
    """The rise of a call's CPU time the target measured, and the claim a call."""
    out = f"{tmp}/sweep.json"
    p = subprocess.run([lib.TRACER, "-u", "other:cache_sweep:swept_call", "--no-python",
                        "--max-overhead", "0", "-o", out, "--", target("cache_sweep"),
                        str(CALLS)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    m = re.search(r"swept_ns ([\d.]+) plain_ns ([\d.]+)", p.stdout)
    trace, _ = load_trace(out)
    ov = trace["metadata"]["overhead"]
    assert ov["entry_hits"]["emulated"] == CALLS and ov["return_hits"] == CALLS, ov
    return float(m.group(1)) - float(m.group(2)), ov["total_ns"] / CALLS, ov


def test_claim_tracks_a_cache_cold_target(tmp):
    """The medians of five runs. On the hot-loop calibration alone the claim was 0.54-0.71 of
    the rise in single runs, 0.63 of the medians (1.3 us charged a call, 2.1 us measured);
    with the trap path's misses 0.79-1.18, 0.98 (load average 15 on 2 CPUs). On the 2-CPU EPYC
    hosts the medians were 0.76-1.12 (5 runs of this test), and 0.76-0.87 once the statistics'
    own clock reads (45-60 ns a run) were no longer charged as the programs' run time: what the
    programs and traps evict of a cold target's data is not measured (empty programs here:
    1.8-2.5 us a call, the calibrated cold traps 1.7 us), hence the lower bound; in CI 0.69
    (2.4 us charged a call, 2.6-4.3 us measured), on an idle host 0.92-1.13 in single runs.
    The hot-loop calibration alone would claim about 0.57 here: that the cold model is used is
    checked in each run's metadata."""
    rises, claims = [], []
    for _ in range(5):
        rise, claim, ov = traced(tmp)
        # charged as cold (the target works 12-20 us a call, a sweep 8-10 us), with what the
        # calibration measured a cold trap adds
        assert ov["traps_cold"] and ov["calibration"]["cold_entry_ns"] > 0, ov
        rises.append(rise)
        claims.append(claim)
    rise, claim = statistics.median(rises), statistics.median(claims)
    assert 0.6 * rise <= claim <= 1.5 * rise, (claims, rises, ov)
