"""Row 1d of bench/bench.py: the overhead budget (--max-overhead, record/budget.c) on a
pathological probe set. The target is tests/targets/prologues --pace: every round calls cet_work
once and sub_rsp (single-stepped: about 10 us a call when probed) 300 times, then sleeps 1 ms.
It runs untraced, traced with no budget, and traced with the default budget; the pace is its
rounds a second (its own count; traced, also from cet_work's spans, one a round). With the
budget, sub_rsp should be shed and the target should get its untraced pace back, while cet_work
is still recorded. b is the harness (bench.py): its helpers and settings."""
import os
import re
import subprocess

SEC = "1d. overhead budget"
SECONDS = 6
PROBES = ["-u", "other:prologues:cet_work", "-u", "other:prologues:sub_rsp"]


def paced(b, tracer_args=None):
    """(rounds, the trace's metadata, cet_work's span starts in us, tracer's stderr): one paced
    run, untraced (no trace) or launched under tracer with tracer_args."""
    target = [os.path.join(b.OUT, "targets", "prologues"), "--pace", str(SECONDS)]
    out = os.path.join(b.TMP, "budget.json")
    cmd = target if tracer_args is None else \
        [b.TRACER, *PROBES, *tracer_args, "-o", out, "--"] + target
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode:
        raise RuntimeError(f"{cmd[0]} exited {p.returncode}: {p.stderr[-500:]}")
    rounds = int(re.search(r"rounds (\d+)", p.stdout).group(1))
    if tracer_args is None:
        return rounds, None, None, ""
    # read line by line: a trace loaded whole would grow this process, and every process it
    # forks later (their peak RSS counts it: row 5 measures tracer's)
    work = []
    with open(out) as f:
        for line in f:
            if '"ph":"X","name":"cet_work"' in line:
                work.append(float(re.search(r'"ts":([\d.]+)', line).group(1)))
    return rounds, b.trace_metadata(out), sorted(work), p.stderr


def own_account(err):
    m = re.search(r"^overhead: .*\(([\d.]+)% of its", err, re.M)
    return float(m.group(1)) if m else float("nan")


def run(b):
    b.log(SEC)
    if not os.access(os.path.join(b.OUT, "targets", "prologues"), os.X_OK):
        b.row(SEC, "paced target", "not run", "", "", "", "build it: make bench")
        return
    base, nobudget, own, before, after, shed_at, kept, missed = [], [], [], [], [], [], [], []
    shed = set()
    for _ in range(3):
        rounds, _, _, _ = paced(b)
        base.append(rounds / SECONDS)
        rounds, _, _, err = paced(b, ["--max-overhead", "0"])
        nobudget.append(rounds / SECONDS)
        own.append(own_account(err))
        rounds, meta, work, err = paced(b, [])
        s = meta.get("shed")
        if not s:
            raise RuntimeError("the default budget shed nothing: " + err[-300:])
        shed.update(s["functions"])
        at = s["at_ns"] / 1000  # µs, as the trace's ts
        shed_at.append(at / 1e6)
        before.append(sum(at - 1e6 <= t < at for t in work))
        after.append(sum(work[-1] - 2e6 <= t for t in work) / 2)
        kept.append(len(work))
        missed.append(rounds - len(work))
    pace0 = b.med(base)
    b.row(SEC, "prologues --pace: 300 single-stepped calls and a 1 ms sleep a round; untraced",
          f"{pace0:.0f} rounds/s (runs {min(base):.0f}-{max(base):.0f})")
    b.row(SEC, "tracer with no budget (--max-overhead 0)",
          f"{b.med(nobudget):.0f} rounds/s; tracer's own account {b.med(own):.0f}% of the "
          f"target's CPU", f"untraced {pace0:.0f}/s", f"{b.med(nobudget) / pace0:.2f}x pace")
    pace1 = b.med(after)
    b.row(SEC, "tracer with the default budget (20%)",
          f"shed {', '.join(sorted(shed))} at {min(shed_at):.1f}-{max(shed_at):.1f} s; "
          f"{b.med(before):.0f} rounds/s the second before, {pace1:.0f} rounds/s the last 2 s; "
          f"cet_work recorded {min(kept)}-{max(kept)} calls, missed {min(missed)}-{max(missed)} "
          f"(while its link was made again)",
          f"untraced {pace0:.0f}/s", f"{pace1 / pace0:.2f}x pace after shedding",
          ">= 0.9x untraced pace after shedding",
          "met" if pace1 >= 0.9 * pace0 else "NOT met")
