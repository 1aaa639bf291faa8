"""Row 1e of bench/bench.py: C++ functions, whose calls end at their own exits (elf/site.h),
so that exceptions thrown through them never meet a return probe. The cost per call of a C++
function that never throws (tests/targets/cxx_throw.cpp --bench-calls: ops::leaf, one `ret`)
with its exit probed, next to a return probe on it as before (TRACER_RETURN_PROBES=1); and the
cost of a throw through N probed frames, untraced and traced. CPU time of the target per call
or throw, rounds interleaved, medians. b is the harness (bench.py): its helpers and settings."""
import os
import re
import subprocess

SEC = "1e. C++ exceptions"


def target(b):
    return os.path.join(b.OUT, "targets", "cxx_throw")


def ns_per_op(b, args, spec=None, env=None):
    """The target's CPU ns per call or throw: untraced (spec None) or launched under tracer."""
    cmd = [target(b)] + args
    if spec:
        cmd = [b.TRACER, "-q", "--max-overhead", "0", "--no-python", "-u", spec, "-o",
               os.path.join(b.TMP, "cxx.json"), "--"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **env) if env else None)
    m = re.search(r"bench ns_per_op ([0-9.]+)", p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"{cmd}: exit {p.returncode}: {p.stderr[-800:]}")
    return float(m.group(1))


def run(b):
    calls = "300000" if b.QUICK else "1000000"
    throws = "3000" if b.QUICK else "10000"
    leaf = "operator:cxx_throw:ops::leaf"
    stages = "operator:cxx_throw:ops::stage*"
    kinds = {"untraced": ([], None, None), "exits": ([], leaf, None),
             "return probe": ([], leaf, {"TRACER_RETURN_PROBES": "1"})}
    depths = (1, 3, 5)
    throw = {(d, k): [] for d in depths for k in ("untraced", "traced")}
    for _ in range(3):  # interleaved rounds
        for k, (xs, spec, env) in kinds.items():
            xs.append(ns_per_op(b, ["--bench-calls", calls], spec, env))
        for d in depths:
            throw[(d, "untraced")].append(ns_per_op(b, ["--bench-throws", f"{d},{throws}"]))
            throw[(d, "traced")].append(ns_per_op(b, ["--bench-throws", f"{d},{throws}"],
                                                  stages))
    base = b.med(kinds["untraced"][0])
    exits = b.med(kinds["exits"][0]) - base
    ret = b.med(kinds["return probe"][0]) - base
    b.row(SEC, "C++ function that never throws, its exit probed: added CPU per call",
          f"+{exits:.0f} ns (runs {b.spread([x - base for x in kinds['exits'][0]])})",
          f"return probe: +{ret:.0f} ns", f"{exits / ret:.2f}x" if ret > 0 else "",
          "measured (the price of never breaking a throw)",
          "its `ret` is single-stepped: a second trap")
    for d in depths:
        u, t = b.med(throw[(d, "untraced")]), b.med(throw[(d, "traced")])
        b.row(SEC, f"a throw through {d} probed frame{'s' if d > 1 else ''}, caught",
              f"{t / 1000:.1f} us traced", f"{u / 1000:.1f} us untraced",
              f"{t / u:.2f}x" if u else "", "never a crash", "ok: the target ran to its end")
