"""Row 1e of bench/bench.py: C++ functions, whose calls end at their own exits (elf/site.h),
so that exceptions thrown through them never meet a return probe. The cost per call of a C++
function that never throws (tests/targets/cxx_throw.cpp --bench-calls: ops::leaf, one `ret`)
with its exit probed, next to a return probe on it as before (TRACER_RETURN_PROBES=1); and the
cost of a throw through N probed frames, untraced and traced. CPU time of the target per call
or throw, rounds interleaved, medians. And a C++ function built as Debian builds its packages
(the stack protector: tests/targets/cxx_epilogues.cpp --bench-calls), its exit moved back from
the single-stepped `ret` to the protector's jne, next to the exit at the `ret`
(TRACER_NO_EXIT_MOVE=1) and a return probe. b is the harness (bench.py): its helpers and
settings."""
import os
import re
import subprocess

SEC = "1e. C++ exceptions"


def target(b, name="cxx_throw"):
    return os.path.join(b.OUT, "targets", name)


def ns_per_op(b, args, spec=None, env=None, name="cxx_throw"):
    """The target's CPU ns per call or throw: untraced (spec None) or launched under tracer."""
    cmd = [target(b, name)] + args
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
    moved_exit(b, calls)
    for d in depths:
        u, t = b.med(throw[(d, "untraced")]), b.med(throw[(d, "traced")])
        b.row(SEC, f"a throw through {d} probed frame{'s' if d > 1 else ''}, caught",
              f"{t / 1000:.1f} us traced", f"{u / 1000:.1f} us untraced",
              f"{t / u:.2f}x" if u else "", "never a crash", "ok: the target ran to its end")


def moved_exit(b, calls):
    spec = "operator:cxx_epilogues:onnx::Resize::Compute"
    kinds = {"untraced": (None, None), "moved": (spec, None),
             "at ret": (spec, {"TRACER_NO_EXIT_MOVE": "1"}),
             "return probe": (spec, {"TRACER_RETURN_PROBES": "1"})}
    ns = {k: [] for k in kinds}
    for _ in range(3):  # interleaved rounds
        for k, (sp, env) in kinds.items():
            ns[k].append(ns_per_op(b, ["--bench-calls", calls], sp, env, "cxx_epilogues"))
    base = b.med(ns["untraced"])
    added = {k: b.med(ns[k]) - base for k in kinds if k != "untraced"}
    b.row(SEC, "C++ function built with the stack protector (as Debian builds): its exit moved "
          "back to the protector's jne, added CPU per call",
          f"+{added['moved']:.0f} ns (runs {b.spread([x - base for x in ns['moved']])})",
          f"exit at its `ret`: +{added['at ret']:.0f} ns; return probe: "
          f"+{added['return probe']:.0f} ns",
          f"{added['moved'] / added['at ret']:.2f}x the `ret`" if added["at ret"] > 0 else "",
          "measured", "a jne is emulated, a `ret` single-stepped")
