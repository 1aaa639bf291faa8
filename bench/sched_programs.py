"""make bench row 10: the scheduler programs' cost per context switch of a many-threaded target
(bench/switcher: pairs of threads passing a byte through pipes), ns per run of each program from
the kernel's BPF run-time statistics. b: the bench module (rows, helpers, paths)."""
import json
import os
import signal
import subprocess
import time

SCHED_PROGS = ("on_switch", "on_waking", "on_wakeup", "on_wakeup_new", "on_irq_entry",
               "on_irq_exit", "on_hrtimer_entry", "on_hrtimer_exit", "on_softirq_entry",
               "on_softirq_exit")


class BpfStats:
    """BPF run-time statistics on while held (BPF_ENABLE_STATS: counted by the kernel, so a
    tracer or another user turning them on or off at the same time changes nothing here)."""

    def __enter__(self):
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        attr = ctypes.create_string_buffer(8)  # union bpf_attr { __u32 type; } = BPF_STATS_RUN_TIME
        self.fd = libc.syscall(321, 32, attr, 8)  # SYS_bpf, BPF_ENABLE_STATS
        if self.fd < 0:
            raise RuntimeError(f"BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())}")
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def prog_ids(pid):
    """The BPF programs pid holds (its fds' fdinfo): other tracers may run the same ones."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                ids |= {int(l.split()[1]) for l in f if l.startswith("prog_id:")}
        except OSError:
            pass
    return ids


def sched_prog_stats(ids):
    """{program name: (run_time_ns, run_cnt)} of the scheduler programs among ids."""
    p = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                       check=True)
    out = {}
    for pr in json.loads(p.stdout):
        if pr.get("id") in ids and pr.get("name") in SCHED_PROGS:
            out[pr["name"]] = (pr.get("run_time_ns", 0), pr.get("run_cnt", 0))
    return out


def ctx_switches(pid):
    """Context switches of every thread of pid so far (voluntary and not)."""
    n = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        n += int(line.split()[1])
        except OSError:
            pass
    return n


def sched_run(b, tracer, pairs, rate, seconds):
    """One window of `seconds` while tracer records the switcher target: per program ns/run and
    runs, the target's switches, and the scheduler records the trace got per switch."""
    out = os.path.join(b.TMP, "sched.json")
    sw = b.Proc([os.path.join(b.BENCH, "switcher"), "-p", str(pairs), "-s", str(seconds + 4), "-r",
               str(rate)], stdout=subprocess.PIPE)
    tr = None
    try:
        ready = sw.p.stdout.readline()
        if not ready.startswith("ready"):
            raise RuntimeError(f"switcher did not start: {sw.text()[-500:]}")
        tr = b.Proc([tracer, "-p", str(sw.pid), "-u", "other:switcher:switcher_pass",
                   "--max-overhead", "0", "-o", out])
        tr.wait_ready()
        time.sleep(0.5)
        ids = prog_ids(tr.pid)
        with BpfStats():
            s0, c0 = sched_prog_stats(ids), ctx_switches(sw.pid)
            time.sleep(seconds)
            s1, c1 = sched_prog_stats(ids), ctx_switches(sw.pid)
        tr.signal(signal.SIGINT)
        if tr.wait(120) != 0:
            raise RuntimeError(f"tracer exited {tr.status}: {tr.text()[-1500:]}")
        progs = {}
        for name, (ns, cnt) in s1.items():
            d_ns, d_cnt = ns - s0.get(name, (0, 0))[0], cnt - s0.get(name, (0, 0))[1]
            progs[name] = (d_ns, d_cnt)
        counts = b.trace_metadata(out).get("counts", {})
        return progs, c1 - c0, counts
    finally:
        sw.kill()
        if tr:
            tr.kill()


def run(b):
    # paced: flat out the target switches faster than the reader takes records on 2 CPUs, and
    # programs that find the ring buffer full cost less
    pairs, rate, seconds = 8, 10000, (2 if b.QUICK else 4)
    tracers = [("tracer", b.TRACER)] + ([("tracer2", b.TRACER2)] if b.TRACER2 else [])
    all_runs = {label: [] for label, _ in tracers}
    for _ in range(3):  # in turns: the machine's load changes over a run
        for label, path in tracers:
            all_runs[label].append(sched_run(b, path, pairs, rate, seconds))
    for label, _ in tracers:
        runs = all_runs[label]
        # loaded but never run: not attached (the interrupt programs where the preempt count
        # is read)
        names = sorted({n for progs, _, _ in runs for n, (_, cnt) in progs.items() if cnt},
                       key=lambda n: SCHED_PROGS.index(n))
        per = []
        for n in names:
            ns = [progs[n][0] / progs[n][1] for progs, _, _ in runs if progs.get(n, (0, 0))[1]]
            cnt = [progs[n][1] / seconds for progs, _, _ in runs if n in progs]
            per.append(f"{n} {b.med(ns):.0f} ns/run ({b.med(cnt) / 1000:.0f}k runs/s)")
        total = [sum(d for d, _ in progs.values()) / sw for progs, sw, _ in runs if sw]
        switches = [sw / seconds for _, sw, _ in runs]
        lost = [c.get("lost_sched_switch", 0) + c.get("lost_sched_wakeup", 0) for _, _, c in runs]
        b.row("10. scheduler programs", f"{label}: {pairs * 2} threads passing a byte through "
            f"pipes, {rate // 1000}k round trips/s ({b.med(switches) / 1000:.0f}k switches/s, "
            f"{max(lost)} records lost), per program",
            "; ".join(per))
        b.row("10. scheduler programs", f"{label}: all scheduler programs' time per switch of the "
            "target (system-wide runs included)",
            f"{b.med(total):.0f} ns/switch (runs {b.spread(total)})")


