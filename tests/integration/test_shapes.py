"""Process shapes: several pids, children and exec'd programs (--follow), libraries loaded
after attach (dlopen), every process mapping an object (-a), containers, replaced binaries."""
import collections
import json
import os
import shutil
import signal
import subprocess
import time

import lib
from lib import (_procs, check_format, finish_tracer, load_trace, sigusr1, spans,
                 start_pipeline, start_tracer, wait_exit)


def start(cmd):
    p, ids = lib.start_ready(cmd)
    return p, ids[0]


def pack(tmp, name, probes):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump({"name": name, "probes": probes}, f)
    return path


def count(trace, name):
    return collections.Counter(e["pid"] for e in spans(trace) if e["name"] == name)


def test_several_pids(tmp):
    out = os.path.join(tmp, "two.json")
    a, pa = start_pipeline("--frames", "30")
    b, pb = start_pipeline("--frames", "20")
    tr = start_tracer("-p", f"{pa},{pb}", "-P", "pipeline", "-o", out)
    sigusr1(pa)
    sigusr1(pb)
    wait_exit(a)
    wait_exit(b)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    assert count(trace, "decode_frame") == {pa: 30, pb: 20}
    procs = {e["pid"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    assert {pa, pb} <= procs


def follow_run(tmp, probes, cmd, nlines, *options):
    """cmd (a spawner mode) traced by pid with --follow and the pack of probes, after SIGUSR1:
    (its pid, the first nlines it prints, the trace)."""
    out = os.path.join(tmp, "follow.json")
    p, pid = start(cmd)
    tr = start_tracer("-p", pid, "--follow", "-P", pack(tmp, "shapes", probes), "-o", out,
                      *options)
    sigusr1(pid)
    lines = [p.stdout.readline().split() for _ in range(nlines)]
    assert wait_exit(p)[0] == 0
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    return pid, lines, trace


def test_follow_fork_and_exec(tmp):
    pid, lines, trace = follow_run(tmp, [
        {"object": "spawner", "function": "work", "category": "other"},
        {"object": "pipeline", "function": "decode_frame", "category": "decode"}],
        [lib.target("spawner"), "--wait-signal", "fork", "5", lib.target("pipeline"),
         "--frames", "4"], 2)
    child, execd = int(lines[0][1]), int(lines[1][1])
    # the forked child from its first instruction; the exec'd program from its entry point
    assert count(trace, "work") == {pid: 5, child: 7}
    assert count(trace, "decode_frame") == {execd: 4}
    followed = {t["pid"] for t in trace["metadata"]["targets"] if t["followed"]}
    assert {child, execd} <= followed


def test_follow_10000_short_lived_children(tmp):
    """--follow through 10,000 children, one after another, each calling work() once: every
    one is traced, the last as the first. A process leaves the kernel's set of traced ones
    (4,096 at most) when it is freed: nothing was removed before, and from about the 4,096th
    child on none was traced, in silence."""
    n = 10000
    # no overhead budget: a slow tracer (the sanitized build, a loaded machine) charged work()
    # 26% of the target's CPU and stopped probing it after 2,891 children (the budget has tests
    # of its own)
    pid, lines, trace = follow_run(tmp, [
        {"object": "spawner", "function": "work", "category": "other"}],
        [lib.target("spawner"), "--wait-signal", "churn", str(n)], 1, "--max-overhead", "0")
    last = int(lines[0][1])
    calls = count(trace, "work")
    c = trace["metadata"]["counts"]
    assert c["processes_not_traced_map_full"] == 0
    assert set(calls.values()) <= {1}, calls
    # every child traced: its call is a span, or one of the spans lost when the ring buffer was
    # full (counted: a slow reader, the sanitized build on a loaded machine)
    assert len(calls) + c["lost_spans"] == n, (len(calls), c["lost_spans"], c)
    assert last in calls or c["lost_spans"], (len(calls), c)


def test_default_follow_probes_no_other_process(tmp):
    """-p PID following its children by default: the probes are the traced processes' own. Another
    process on the machine running the same program has no breakpoint in its code (each of its
    calls would trap while tracer records: the links served every process mapping the object,
    filtered in BPF); the target has its own, and so does a child it forks later (links of its
    own: its parent's fire only in its parent), whose calls are recorded from a few ms after its
    fork on. The links of the processes that exit are
    closed while tracer goes on recording: 10,000 short-lived children leave none behind."""
    out = os.path.join(tmp, "scoped.json")
    keep, keep_pid = start_pipeline("--forever")  # keeps tracer recording after the spawner
    other, other_pid = start([lib.target("spawner"), "--wait-signal", "churn", "1"])
    p, pid = start([lib.target("spawner"), "--wait-signal", "fork-steady", "1500"])
    tr = start_tracer("-p", f"{keep_pid},{pid}", "-P", pack(tmp, "shapes", [
        {"object": "spawner", "function": "work", "category": "other"}]), "-o", out)
    links = lambda: {i for kind, i in lib.bpf_ids(tr.pid) if kind == "link"}
    before = links()
    assert lib.breakpoints(pid, "spawner"), "the target's work() holds no breakpoint"
    assert lib.breakpoints(other_pid, "spawner") == [], "a process not traced traps"
    sigusr1(pid)
    child, forked_ns = (int(x) for x in p.stdout.readline().split()[1:])
    deadline = time.monotonic() + 10  # (its parent's breakpoints it has from the fork)
    while not links() - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert links() - before, "the child got no links of its own"
    assert lib.breakpoints(other_pid, "spawner") == [], "a process not traced traps"
    assert wait_exit(p)[0] == 0
    deadline = time.monotonic() + 10  # closed off tracer's main thread
    while (links() - before or len(links()) >= len(before)) and time.monotonic() < deadline:
        time.sleep(0.05)
    # the child's links and its parent's are gone, the scheduler's stay
    assert not links() - before and len(links()) < len(before), (before, links())
    tr.send_signal(signal.SIGINT)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    keep.send_signal(signal.SIGINT)
    sigusr1(other_pid)
    assert wait_exit(other)[0] == 0
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    calls = sorted(e["ts"] for e in spans(trace) if e["name"] == "work" and e["pid"] == child)
    assert calls, "no call of the child recorded"
    # traced until it exits, from a moment after its fork (4 to 17 ms on this 2-CPU VM under
    # load; the bound allows a far busier one)
    first_ms = (trace["metadata"]["t0_monotonic_ns"] + calls[0] * 1000 - forked_ns) / 1e6
    assert 0 < first_ms < 1000, first_ms
    assert calls[-1] - calls[0] > 400 * 1000, (calls[0], calls[-1])


def traced_pids(tracer):
    """The keys of a running tracer's BPF map of traced processes."""
    for _, i in lib.fdinfo_values(tracer.pid, "map_id"):
        show = json.loads(subprocess.run(["bpftool", "map", "show", "id", str(i), "-j"],
                                         capture_output=True, text=True).stdout)
        if show.get("name") == "targets":
            dump = json.loads(subprocess.run(["bpftool", "map", "dump", "id", str(i), "-j"],
                                             capture_output=True, text=True).stdout)
            return {int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little")
                    for e in dump}
    raise AssertionError("tracer holds no map named targets")


def test_follow_reused_pid_not_traced(tmp):
    """--follow: a child exits and is reaped, and leaves the kernel's set of traced processes;
    a stranger that later gets its pid (through ns_last_pid) and runs the same program is not
    traced (the entry stayed before, and its calls were recorded)."""
    out = os.path.join(tmp, "reuse.json")
    keep, keep_pid = start_pipeline("--forever")  # keeps tracer recording after the spawner
    p, pid = start([lib.target("spawner"), "--wait-signal", "churn", "1"])
    probes = pack(tmp, "shapes", [{"object": "spawner", "function": "work", "category": "other"}])
    tr = start_tracer("-p", f"{keep_pid},{pid}", "--follow", "-P", probes, "-o", out)
    sigusr1(pid)
    child = int(p.stdout.readline().split()[1])
    assert wait_exit(p)[0] == 0
    deadline = time.monotonic() + 10  # freed after an RCU grace period
    while child in traced_pids(tr) and time.monotonic() < deadline:
        time.sleep(0.05)
    for _ in range(20):  # another process on the machine may take the pid first
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(child - 1))
        stranger = subprocess.Popen([lib.target("spawner"), "work", "5"])
        stranger.wait()
        if stranger.pid == child:
            break
    else:
        raise lib.Skip(f"pid {child} could not be given again")
    tr.send_signal(signal.SIGINT)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    keep.send_signal(signal.SIGINT)
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    calls = count(trace, "work")[child]
    assert calls == 1, calls  # the child's call; none of the stranger's five


def test_follow_exec_from_a_thread(tmp):
    """A thread other than the main one execs: the kernel gives it the main thread's id, and the
    new program's spans carry that id, not the old thread's (the BPF side keeps each thread's
    ids with its open calls, and updates them at the exec)."""
    pid, lines, trace = follow_run(tmp, [
        {"object": "spawner", "function": "work", "category": "other"}],
        [lib.target("spawner"), "--wait-signal", "thread-exec", "5", lib.target("spawner"),
         "work", "4"], 1)
    tid = int(lines[0][1])
    assert tid != pid
    # 5 calls on the thread before its exec, 4 in the new program, on the same thread
    ids = collections.Counter((e["pid"], e["tid"]) for e in spans(trace) if e["name"] == "work")
    assert ids == {(pid, tid): 5, (pid, pid): 4}, ids


def test_library_loaded_after_attach(tmp):
    out = os.path.join(tmp, "d.json")
    probes = pack(tmp, "plugin", [
        {"object": "libplugin.so", "function": "plugin_work", "category": "operator"}])
    p, pid = start([lib.target("spawner"), "--wait-signal", "dlopen",
                    lib.target("libplugin.so"), "200"])
    tr = start_tracer("-p", pid, "-P", probes, "-o", out)
    sigusr1(pid)
    assert p.stdout.readline().strip() == "loaded"
    assert wait_exit(p)[0] == 0
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    calls = [e for e in spans(trace) if e["name"] == "plugin_work"]
    # 200 calls 10 ms apart; probed within a second of the dlopen
    assert 100 <= len(calls) <= 200, len(calls)


def test_system_wide_catches_later_processes(tmp):
    out = os.path.join(tmp, "a.json")
    a, pa = start_pipeline("--forever", "--bottleneck", "none")
    sigusr1(pa)
    tr = start_tracer("-a", "-u", "decode:pipeline:decode_frame", "-o", out)
    b, pb = start_pipeline("--frames", "30")
    sigusr1(pb)
    assert wait_exit(b)[0] == 0
    time.sleep(0.3)
    tr.send_signal(signal.SIGINT)
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    n = count(trace, "decode_frame")
    assert n[pb] == 30 and n[pa] > 10, n
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert names.get(pa) == "pipeline" and names.get(pb) == "pipeline"
    a.send_signal(signal.SIGINT)
    wait_exit(a)


def test_container_namespaces(tmp):
    out = os.path.join(tmp, "c.json")
    p = subprocess.Popen(["unshare", "--mount", "--pid", "--fork", "--mount-proc",
                          lib.target("pipeline"), "--wait-signal", "--frames", "15"],
                         stdout=subprocess.PIPE, text=True)
    _procs.append(p)
    inner = p.stdout.readline().split()
    assert inner[0] == "ready" and inner[1] == "1", inner  # pid 1 in its own namespace
    # its pid as the host sees it: the child of unshare
    with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
        host_pid = int(f.read().split()[0])
    tr = start_tracer("-p", host_pid, "-P", "pipeline", "-o", out)
    os.kill(host_pid, signal.SIGUSR1)
    assert wait_exit(p)[0] == 0
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, _ = load_trace(out)
    assert count(trace, "decode_frame") == {host_pid: 15}


def test_binary_replaced_on_disk(tmp):
    out = os.path.join(tmp, "r.json")
    exe = os.path.join(tmp, "pipeline")
    shutil.copy(lib.target("pipeline"), exe)
    p, pid = start([exe, "--wait-signal", "--frames", "12"])
    os.unlink(exe)  # an upgrade replaced it: the running process keeps the old file
    with open(exe, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    tr = start_tracer("-p", pid, "-P", "pipeline", "-o", out)
    sigusr1(pid)
    assert wait_exit(p)[0] == 0
    rc, err = finish_tracer(tr)
    assert rc == 0, err
    trace, _ = load_trace(out)
    assert count(trace, "decode_frame") == {pid: 12}


def test_cxx_calls_end_at_their_exits_no_warning(tmp):
    """C++ functions (an object with exception tables) keep durations without a return probe:
    their calls end at their own `ret`s, with no warning to add --entry-only; with it, each
    call is an instant."""
    out = os.path.join(tmp, "x.json")
    p, pid = start([lib.target("cxx_ops"), "--wait-signal", "--iterations", "0", "--us", "200"])
    sigusr1(pid)
    spec = "operator:*:onnx::Conv*::Compute"
    rc, err = lib.run_tracer("-p", pid, "-u", spec, "-d", "2", "-o", out)
    assert rc == 0 and "C++" not in err and "--entry-only" not in err, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    conv = [e for e in spans(trace) if e["name"] == "onnx::Conv::Compute"]
    # each Compute spins 200 us: its span, ended at its own ret, lasts that long (the one
    # still running at the stop ends there, marked incomplete)
    done = [e for e in conv if not e.get("args", {}).get("incomplete")]
    # (a loaded machine: 21 calls in 0.6 s once)
    assert len(done) >= len(conv) - 1 > 20, (len(done), len(conv))
    assert all(e["dur"] >= 200 for e in done), [e for e in done if e["dur"] < 200][:3]
    assert [x["exits"] for x in trace["metadata"]["probes"]] == [1]
    # where that exit is (what make bench's floor probes): a ret in the file, in the function
    (probe,) = trace["metadata"]["probes"]
    with open(lib.target("cxx_ops"), "rb") as f:
        f.seek(probe["exit_offsets"][0])
        assert f.read(1) == b"\xc3", probe
    assert probe["offset"] < probe["exit_offsets"][0], probe
    rc, err = lib.run_tracer("-p", pid, "--entry-only", "-u", spec, "-d", "2", "-o", out)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    instants = [e for e in trace["traceEvents"] if e["ph"] == "i" and e["name"] == "onnx::Conv::Compute"]
    assert len(instants) > 20 and not spans(trace), (len(instants), len(spans(trace)))
    assert [x.get("entry_only") for x in trace["metadata"]["probes"]] == [True]
    p.kill()


def test_cxx_exits_found_while_another_tool_probes_them(tmp):
    """Another tracer probing every process (-a) puts its int3 on the same function's entry and
    exits, in every private mapping of the file that could run code, a reader's too: the code
    must be read as it is on disk, or the exits are not found and the calls become instants."""
    out, other = os.path.join(tmp, "x.json"), os.path.join(tmp, "other.json")
    p, pid = start([lib.target("cxx_ops"), "--wait-signal", "--iterations", "0", "--us", "200"])
    sigusr1(pid)
    spec = "operator:cxx_ops:onnx::Conv*::Compute"
    sys_wide = lib.start_tracer("-a", "-u", spec, "-o", other)
    rc, err = lib.run_tracer("-p", pid, "-u", spec, "-d", "1", "-o", out)
    sys_wide.send_signal(signal.SIGINT)
    assert lib.finish_tracer(sys_wide)[0] == 0
    assert rc == 0 and "entry-only" not in err, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    conv = [e for e in spans(trace) if e["name"] == "onnx::Conv::Compute"]
    instants = [e for e in trace["traceEvents"] if e["ph"] == "i" and e["name"] == "onnx::Conv::Compute"]
    assert len(conv) > 20 and not instants, (len(conv), len(instants))
    assert [x["exits"] for x in trace["metadata"]["probes"]] == [1]
    p.kill()


def test_uprobe_on_library_loaded_later_in_launch_mode(tmp):
    """A -u spec on a library the launched program dlopens later waits for it (no error at the
    start), is probed when it appears, and names it without its .so suffix, as bpftrace users
    write it; a spec whose library never comes is one warning at the end."""
    out = os.path.join(tmp, "late.json")
    rc, err = lib.run_tracer("-u", "operator:libplugin:plugin_work",
                             "-u", "decode:libnever:never_called", "-o", out, "--",
                             lib.target("spawner"), "dlopen", lib.target("libplugin.so"), "150",
                             timeout=120)
    assert rc == 0, err
    assert "-u 'operator:libplugin:plugin_work': no object 'libplugin' is mapped yet" in err, err
    never = [l for l in err.splitlines() if "matched nothing while recording" in l]
    assert len(never) == 1 and "libnever" in never[0], err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    calls = [e for e in spans(trace) if e["name"] == "plugin_work"]
    # 150 calls 10 ms apart; probed within a rescan (0.5 s) of the dlopen
    assert 90 <= len(calls) <= 150, len(calls)


def test_follow_through_a_script_that_execs(tmp):
    """tracer --follow -- script: the shell execs the program (the launched pid runs a new
    program); it is held at its entry point, probed and let go, never left stopped. The same
    with no option (following is the default); with --no-follow, a script gets a hint."""
    script = os.path.join(tmp, "run.sh")
    with open(script, "w") as f:
        f.write(f"#!/bin/sh\nexec {lib.target('pipeline')} --frames 25\n")
    os.chmod(script, 0o755)
    out = os.path.join(tmp, "exec.json")
    pack_path = os.path.join(lib.ROOT, "probes", "pipeline.json")
    rc, err = lib.run_tracer("--follow", "-P", pack_path, "-o", out, "--", script, timeout=60)
    assert rc == 0, err
    trace, text = load_trace(out)
    assert check_format(trace, text) == []
    assert len([e for e in spans(trace) if e["name"] == "decode_frame"]) == 25
    assert trace["metadata"]["stop_reason"] == "target exited"
    rc, err = lib.run_tracer("-P", pack_path, "-o", out, "--", script, timeout=60)
    assert rc == 0 and "is a script" not in err, err
    trace, text = load_trace(out)
    assert len([e for e in spans(trace) if e["name"] == "decode_frame"]) == 25
    rc, err = lib.run_tracer("--no-follow", "-P", pack_path, "-o", out, "--", script, timeout=60)
    assert rc == 0 and f"{script} is a script" in err and "--no-follow" in err, err
