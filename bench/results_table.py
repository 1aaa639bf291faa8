"""bench/bench.py's results: the table on the terminal and bench/results.md. b is the harness."""
import os
import platform


def write_results(b, path, started, took):
    kernel = platform.release()
    lines = [
        "# Benchmark results",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} (took {took / 60:.1f} min)",
        f"- kernel: {kernel}, {os.cpu_count()} CPUs, {platform.machine()}; load average "
        f"{b.LOAD[0]} at the start, {b.loadavg()} at the end (other work shares this machine)",
        f"- command: `make bench{' b.QUICK=1' if b.QUICK else ''}` "
        f"(`python3 bench/bench.py --output {os.path.relpath(b.OUT, b.ROOT)}"
        f"{' --quick' if b.QUICK else ''}{' --compare-tracer ' + b.TRACER2 if b.TRACER2 else ''}`)",
        "- every number is the median of 3 runs in this one run, against baselines measured in "
        "the same run; the machine is shared and noisy, so compare ratios, not absolute times",
        "- cost per call is the loop threads' CPU time (CLOCK_THREAD_CPUTIME_ID: it includes the "
        "kernel's time in traps and BPF programs on the thread, not time spent waiting for a "
        "CPU) minus the untraced loop's; ffmpeg's CPU time is all its threads' (wait4)",
        "",
        "| section | what | measured | baseline | ratio | goal | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in b.ROWS:
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in r) + " |")
    if b.NOTES:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in b.NOTES]
    text = "\n".join(lines) + "\n"
    if path:
        with open(path, "w") as f:
            f.write(text)
    return text


def print_table(b):
    widths = [max(len(str(r[i])) for r in b.ROWS + [("section", "what", "measured", "baseline",
                                                   "ratio", "goal", "verdict")])
              for i in range(7)]
    widths = [min(w, 60) for w in widths]
    hdr = ("section", "what", "measured", "baseline", "ratio", "goal", "verdict")
    for r in [hdr] + b.ROWS:
        print("  ".join(str(x)[:60].ljust(w) for x, w in zip(r, widths)).rstrip())
