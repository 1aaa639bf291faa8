"""Row 1c of bench/bench.py: moved probe sites (userspace/elf/site.h). The cost per call of
tracer's probes on functions whose first instruction is single-stepped, with the site moved
past it and (TRACER_NO_SITE_MOVE=1) left on it, against a push-first function; whether every
call is one span; and the share of Debian's libc functions tracer probes at emulated cost.
b is the harness (bench.py): its helpers and settings."""
import os
import re
import subprocess

SEC = "1c. moved sites"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def traced_run(b, func, seconds, env=None):
    """(added CPU ns per call over untraced, spans == calls): one untraced and one traced run of
    the loop on func, back to back."""
    base = b.cost_run(None, func, 1, seconds)
    loop = b.Loop("-f", func, "-t", 1, "-s", seconds)
    out = os.path.join(b.TMP, "cost.json")
    proc = b.Proc(b.tool_cmds("tracer", loop.pid, func), env=env)
    try:
        proc.wait_ready()
        loop.wait_probed()
        loop.go()
        res = loop.result()
        if proc.wait(120) != 0:
            raise RuntimeError(f"tracer exited {proc.status}: {proc.text()[-1500:]}")
    finally:
        loop.kill()
        proc.kill()
    meta = b.trace_metadata(out)
    c = meta["counts"]
    exact = (c["spans"] == res["calls"] and not c["unmatched_returns"] and
             not c["incomplete_no_return"])
    site = {p["function"]: p.get("site_offset", p["offset"]) - p["offset"]
            for p in meta["probes"]}[func]
    return res["ns_per_call"] - base, exact, site


def cost_rows(b):
    seconds = 0.5 if b.QUICK else 1.0
    runs = [("push", "bench_push", None),
            ("endbr64; push, moved", "bench_endbr_push", None),
            ("endbr64; push, not moved", "bench_endbr_push", {"TRACER_NO_SITE_MOVE": "1"}),
            ("test; jcc (early return every other call), moved", "bench_test_jcc", None),
            ("test; jcc (early return every other call), not moved", "bench_test_jcc",
             {"TRACER_NO_SITE_MOVE": "1"})]
    added = {k: [] for k, _, _ in runs}
    exact = {k: True for k, _, _ in runs}
    sites = {}
    for r in range(3):  # interleaved: each round measures every kind once
        for key, func, env in runs:
            a, ok, site = traced_run(b, func, seconds, env)
            added[key].append(a)
            exact[key] &= ok
            sites[key] = site
    push = b.med(added["push"])
    for key, func, env in runs:
        a = b.med(added[key])
        detail = (f"+{a:.0f} ns/call (runs {b.spread(added[key])}); site +{sites[key]}; "
                  f"spans {'= calls, every run' if exact[key] else 'NOT one per call'}")
        if key == "push":
            b.row(SEC, f"tracer, {key} first", detail)
            continue
        moved = key.endswith(", moved")
        b.row(SEC, f"tracer, {key}", detail, f"push +{push:.0f}", f"{a / push:.2f}x push",
              "<= 1.5x push, spans exact" if moved else "",
              ("met" if a <= 1.5 * push and exact[key] else "NOT met") if moved else "")


def libc_share(b):
    """Functions of Debian's libc by the class of their probe site, from tracer list: before
    (the first instruction) and after (the moved site)."""
    p = subprocess.run([b.TRACER, "list", LIBC], capture_output=True, text=True, timeout=120)
    rows = re.findall(r"^ +[0-9a-f]+  (emulated|optimized|single-stepped)( \+\d+)? ",
                      p.stdout, re.M)
    if not rows:
        raise RuntimeError(f"tracer list {LIBC} printed no rows: {p.stderr[-300:]}")
    cheap_first = sum(1 for cls, moved in rows if cls != "single-stepped" and not moved)
    cheap_site = sum(1 for cls, _ in rows if cls != "single-stepped")
    stays = {}
    for why in re.findall(r"\(stays: ([^)]+)\)", p.stdout):
        stays[why] = stays.get(why, 0) + 1
    b.row(SEC, f"Debian libc functions probed at emulated cost ({len(rows)} functions)",
          f"{100 * cheap_site / len(rows):.1f}% with moved sites",
          f"{100 * cheap_first / len(rows):.1f}% at the first instruction",
          f"+{cheap_site - cheap_first} functions", ">= 75%",
          "met" if cheap_site >= 0.75 * len(rows) else "NOT met")
    b.NOTES.append("libc functions whose site stays single-stepped, by reason: " +
                   ", ".join(f"{why} {n}" for why, n in sorted(stays.items(),
                                                              key=lambda kv: -kv[1])))


def run(b):
    b.log(SEC)
    libc_share(b)
    cost_rows(b)
