"""Helpers for integration tests: start target programs, run tracer, read traces, and check them
against the rules of doc/trace-format.md and against the targets' ground truth."""
import collections
import gzip
import json
import os
import re
import select
import signal
import subprocess
import sys
import time

ROOT = OUTPUT = TRACER = None
_procs = []


class Skip(Exception):
    pass


def offline(test):
    """Marks a test that attaches nothing (it reads committed traces, runs tracer's offline
    commands, checks files): tests/run.py runs it for any user, not only root."""
    test.offline = True
    return test


def configure(root, output):
    global ROOT, OUTPUT, TRACER
    ROOT, OUTPUT = root, output
    TRACER = os.path.join(output, "tracer")
    # the packs of this tree, wherever the build went
    os.environ.setdefault("TRACER_PROBES", os.path.join(root, "probes"))


# In make check-kernels' emulated VM (qemu TCG) a probe hit costs tens of µs: counts and nesting
# are checked there, durations and start times on a real CPU.
IN_VM = os.environ.get("TRACER_TEST_IN_VM") == "1"
# tracer's waits scaled there: loading the programs takes 5-10 s, and closing the per-function
# links at exit took 25-30 s for the pipeline pack (a 30 s bound killed it mid-close, and the
# kill's wait outlasted the VM)
SLOW = 4 if IN_VM else 1


def kernel_at_least(major, minor):
    release = os.uname().release.split(".")
    return (int(release[0]), int(re.match(r"\d+", release[1]).group())) >= (major, minor)


def compat_programs():
    """Whether tracer loads its programs for older kernels here (5.10 to 5.16: no bpf_loop;
    record/kernel_check.c)."""
    return not kernel_at_least(5, 17)


def target(name):
    return os.path.join(OUTPUT, "targets", name)


def cleanup():
    """Kill whatever a test left running."""
    while _procs:
        p = _procs.pop()
        if p.poll() is None:
            p.kill()
            try:  # a process inside the kernel (closing links) dies when it comes out
                p.wait(timeout=120 * SLOW)
            except subprocess.TimeoutExpired:
                print(f"pid {p.pid} still alive 2 min after SIGKILL", file=sys.stderr)


def start_pipeline(*args, log=None):
    """Starts the sample pipeline waiting for SIGUSR1; returns (Popen, pid)."""
    cmd = [target("pipeline"), "--wait-signal"] + list(args)
    if log:
        cmd += ["--log", log]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _procs.append(p)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", f"pipeline did not start: {line}"
    return p, int(line[1])


def sanitized():
    """Whether the tracer under test is built with AddressSanitizer (make check-san)."""
    with open(TRACER, "rb") as f:
        return b"__asan_init" in f.read()


def start_ready(cmd, **popen_args):
    """Starts a target that prints "ready PID [MORE...]" once set up; returns (process, [PID,
    MORE...]) as integers."""
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, text=True, **popen_args)
    _procs.append(p)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", line
    return p, [int(x) for x in line[1:]]


def start_tracer(*args, env=None, timeout=30):
    """Starts tracer and waits until it says it is recording (timeout: seconds)."""
    p = subprocess.Popen([TRACER] + [str(a) for a in args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **env) if env else None)
    _procs.append(p)
    p.stderr_lines = []
    deadline = time.monotonic() + timeout * SLOW
    # read from the descriptor, not the text stream: its readline buffers lines past the one
    # it returns, which select then does not see (two lines written together: the second was
    # read only when tracer next wrote)
    fd, pending = p.stderr.fileno(), b""
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            data = os.read(fd, 65536)
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            p.stderr_lines += [line.decode(errors="replace") + "\n" for line in lines]
            if any(line.startswith(b"tracer: recording") for line in lines):
                if pending:
                    p.stderr_lines.append(pending.decode(errors="replace"))
                p.bpf_ids = bpf_ids(p.pid)
                return p
        elif p.poll() is not None:
            break
    if pending:
        p.stderr_lines.append(pending.decode(errors="replace"))
    out, err = p.communicate(timeout=30)
    raise AssertionError(f"tracer did not start recording: {''.join(p.stderr_lines)}{err}")


def finish_tracer(p, timeout=60):
    """Waits for tracer; returns (exit status, stderr text)."""
    _, err = p.communicate(timeout=timeout * SLOW)
    return p.returncode, "".join(p.stderr_lines) + err


def run_tracer(*args, timeout=60, env=None):
    p = subprocess.run([TRACER] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout * SLOW, env=dict(os.environ, **env) if env else None)
    return p.returncode, p.stderr


def load_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        text = f.read()
    return json.loads(text), text


def read_ground_truth(path):
    """The pipeline's log: {'pid', 'threads': {tid: name}, 'calls': [(tid, func, start, end, op)]}"""
    gt = {"threads": {}, "calls": []}
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "#":
                if w[1] == "pid":
                    gt["pid"] = int(w[2])
                elif w[1] == "thread":
                    gt["threads"][int(w[2])] = w[3]
                continue
            gt["calls"].append((int(w[0]), w[1], int(w[2]), int(w[3]), w[4] if len(w) > 4 else None))
    return gt


def us_to_ns(text):
    """ts/dur strings with three decimals -> integer ns, without float rounding."""
    whole, _, frac = text.partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


X_RE = re.compile(r'"ts":(\d+(?:\.\d+)?),"dur":(\d+(?:\.\d+)?)')
FTRACE_RE = re.compile(
    r"^\s*(\S.*)-(\d+)\s+\(\s*(\d+|-----)\)\s\[(\d{3})\]\s[dX.][Nnp.][Hhs.][0-9a-f.]\s+"
    r"(\d+\.\d{9}): (sched_switch|sched_waking|sched_wakeup|sched_wakeup_new): (.*)$")
SWITCH_RE = re.compile(
    r"prev_comm=(\S+) prev_pid=(\d+) prev_prio=(\d+) prev_state=(R\+|[RSDTtXZ]) ==> "
    r"next_comm=(\S+) next_pid=(\d+) next_prio=(\d+)$")


def spans(trace):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X"]


def check_format(trace, text):
    """Every rule of doc/trace-format.md that applies to what tracer writes. Returns a list
    of violations (empty when the trace is right)."""
    bad = []
    if not (text.lstrip().startswith('{"') or text.lstrip().startswith('[{"')):
        bad.append("file does not start with {\" or [{\"")
    if "displayTimeUnit" in trace and trace["displayTimeUnit"] not in ("ms", "ns"):
        bad.append("displayTimeUnit must be ms or ns")
    events = trace.get("traceEvents")
    if not isinstance(events, list) or not events:
        return bad + ["no traceEvents"]
    # one event per line inside traceEvents
    body = text[text.index("[") + 1:text.index("\n],\n")]
    for line in body.strip().split("\n"):
        try:
            json.loads(line.rstrip(","))
        except ValueError:
            bad.append(f"traceEvents line is not one JSON object: {line[:80]}")
            break
    # exact ns: three decimals on every ts/dur of X events
    for m in X_RE.finditer(text):
        for v in m.groups():
            if "." not in v or len(v.split(".")[1]) != 3:
                bad.append(f"ts/dur without exactly three decimals: {v}")
                break
    names = {}
    by_thread = collections.defaultdict(list)
    for e in events:
        ph = e.get("ph")
        if ph == "X":
            for k in ("name", "cat", "ts", "dur", "pid", "tid"):
                if k not in e:
                    bad.append(f"X event without {k}: {e}")
            if e.get("dur", 0) < 0:
                bad.append(f"negative dur: {e}")
            by_thread[(e["pid"], e["tid"])].append(e)
        elif ph == "M":
            if e["name"] in ("process_name", "thread_name") and not isinstance(e.get("args", {}).get("name"), str):
                bad.append(f"M event without args.name: {e}")
            if e["name"] == "thread_name":
                names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif ph not in ("i", "C", "s", "t", "f", "b", "e"):
            bad.append(f"unexpected phase {ph}")
    # perfect nesting per (pid, tid), in integer ns
    for key, evs in by_thread.items():
        ivs = sorted(((round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e["dur"] * 1000), e["name"])
                      for e in evs), key=lambda x: (x[0], -x[1]))
        stack = []
        for s, t, n in ivs:
            while stack and s >= stack[-1][1]:
                stack.pop()
            if stack and t > stack[-1][1]:
                bad.append(f"overlap on {key}: {n} [{s},{t}] vs {stack[-1][2]} [{stack[-1][0]},{stack[-1][1]}]")
                break
            stack.append((s, t, n))
        if key not in names:
            bad.append(f"thread {key} has spans but no thread_name")
    sched = trace.get("systemTraceEvents")
    if sched is not None:
        bad += check_sched_text(sched, trace)
    if not isinstance(trace.get("metadata"), dict):
        bad.append("no metadata object")
    return bad


WAKEUP_RE = re.compile(r"^comm=(\S+) pid=(\d+) prio=(\d+)( success=1)? target_cpu=(\d{3})$")


def check_sched_text(sched, trace):
    """The scheduler text rules (doc/trace-format.md, "Scheduler states"). No offline viewer here
    draws scheduler tracks, so this check stands in for Perfetto's and catapult's ftrace
    importers: a line either rejects is lost, a wrong column misplaces a thread."""
    bad = []
    if not sched.startswith("# tracer: nop\n") or not sched.endswith("\n"):
        bad.append("systemTraceEvents must start with '# tracer: nop' and end with a newline")
    # the process of every thread the events name: the tgid column must agree with it, or the
    # viewers put the thread's scheduler track under another process
    process_of = {e["tid"]: e["pid"] for e in trace["traceEvents"]
                  if e.get("ph") == "M" and e.get("name") == "thread_name"}
    duration_us = trace.get("metadata", {}).get("duration_ns", 0) / 1000
    last_on_cpu = {}
    for line in sched.split("\n"):
        if not line or line.startswith("#"):
            continue
        m = FTRACE_RE.match(line)
        if not m:
            bad.append(f"ftrace line neither importer accepts: {line}")
            break
        tid, tgid, cpu, event, payload = int(m.group(2)), m.group(3), m.group(4), m.group(6), \
            m.group(7)
        t_us = float(m.group(5)) * 1e6
        if event == "sched_switch":
            sw = SWITCH_RE.search(payload)
            if not sw:
                bad.append(f"sched_switch payload malformed: {line}")
                break
            if int(sw.group(2)) != tid:
                bad.append(f"sched_switch not from the task it switches out (prev_pid): {line}")
                break
        else:
            if event == "sched_wakeup" and "success=1" not in payload:
                bad.append(f"sched_wakeup without success= (catapult needs it): {line}")
                break
            if not WAKEUP_RE.match(payload):
                bad.append(f"{event} payload malformed: {line}")
                break
        if tgid != "-----" and tid in process_of and int(tgid) != process_of[tid]:
            bad.append(f"tgid column {tgid} is not the process of thread {tid} "
                       f"({process_of[tid]}): {line}")
            break
        # the ftrace seconds are on the clock of ts: inside the recording
        if duration_us and not -1 <= t_us <= duration_us + 1:
            bad.append(f"scheduler line outside the recording (0..{duration_us:.0f}us): {line}")
            break
        # each CPU's switches in time order: catapult builds a CPU's track from them in turn.
        # Wake-ups may come late (with the woken thread's switch in): catapult sorts each
        # thread's wake-ups by time, Perfetto sorts all of a JSON trace's events.
        if event == "sched_switch":
            if t_us < last_on_cpu.get(cpu, t_us):
                bad.append(f"scheduler line goes back in time on CPU {cpu}: {line}")
                break
            last_on_cpu[cpu] = t_us
    return bad


def sched_lines(trace):
    """Parsed sched_switch lines: dicts with prev/next tids and states."""
    out = []
    for line in trace.get("systemTraceEvents", "").split("\n"):
        m = FTRACE_RE.match(line)
        if m and m.group(6) == "sched_switch":
            s = SWITCH_RE.search(m.group(7))
            out.append({"ts": float(m.group(5)), "prev": int(s.group(2)), "state": s.group(4),
                        "next": int(s.group(6))})
    return out


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def wait_exit(p, timeout=60):
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def sigusr1(pid):
    os.kill(pid, signal.SIGUSR1)


def our_bpf_programs():
    """Names of loaded BPF programs that are tracer's (bpftool prog list)."""
    p = subprocess.run(["bpftool", "-j", "prog", "list"], capture_output=True, text=True)
    progs = json.loads(p.stdout or "[]")
    mine = {"span_enter", "span_exit", "on_switch", "on_waking", "on_wakeup", "on_wakeup_ne",
            "on_wakeup_new", "on_fork", "on_exit", "on_rename", "on_exec", "check_irq_ctx"}
    return [pr["name"] for pr in progs if pr.get("name") in mine]


def fdinfo_values(pid, *keys):
    """{(key, value)} of the lines "key: value" (an integer) in a process's fds' fdinfo: the BPF
    maps, programs and links it holds (map_id, prog_id, link_id), the pids of its pidfds (Pid).
    An fd closed while they are read is skipped."""
    out = set()
    fddir = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fddir):
        try:
            with open(os.path.join(fddir, fd)) as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if k in keys:
                        out.add((k, int(v.split()[0])))
        except OSError:
            pass
    return out


def bpf_ids(pid):
    """The BPF programs and links a process holds, from its fds' fdinfo."""
    return {(k[:-3], v) for k, v in fdinfo_values(pid, "prog_id", "link_id")}


def bpf_object_exists(kind, ident):
    return subprocess.run(["bpftool", kind, "show", "id", str(ident)],
                          capture_output=True).returncode == 0


def wait_probes_gone(tracer=None, timeout=5):
    """tracer's programs and links are freed shortly after it exits (the kernel defers it past
    an RCU grace period); they must all be gone within the timeout. With the tracer process
    given, its own objects are checked (other tracers may run on the machine); otherwise no
    program of tracer's may be loaded at all."""
    def left():
        if tracer is not None:
            return [i for i in tracer.bpf_ids if bpf_object_exists(*i)]
        return our_bpf_programs()
    deadline = time.monotonic() + timeout
    while left() and time.monotonic() < deadline:
        time.sleep(0.1)
    return left() == []


def breakpoints(pid, name):
    """Where the code of process pid differs from the file it maps by basename name: the file
    offsets of the breakpoints uprobes wrote into that process (each probe hit is a trap)."""
    found = []
    with open(f"/proc/{pid}/maps") as f:
        maps = [l.split() for l in f]
    for addr, perms, off, _dev, _inode, *path in maps:
        if "x" not in perms or not path or os.path.basename(path[0]) != name:
            continue
        lo, hi = (int(x, 16) for x in addr.split("-"))
        with open(f"/proc/{pid}/map_files/{lo:x}-{hi:x}", "rb") as obj:
            obj.seek(int(off, 16))
            want = obj.read(hi - lo)
        with open(f"/proc/{pid}/mem", "rb") as mem:
            mem.seek(lo)
            got = mem.read(len(want))
        for k in range(0, len(want), 4096):  # page by page: megabytes of code
            if want[k:k + 4096] != got[k:k + 4096]:
                found += [int(off, 16) + k + i for i, (a, b) in
                          enumerate(zip(want[k:k + 4096], got[k:k + 4096])) if a != b]
    return found
