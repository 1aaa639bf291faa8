"""A newcomer's snags (issue 30): what tracer says when a first try goes wrong — a target no
pack fits, pids as pidof gives them, perf's idioms, a misspelt option, a kernel without BTF —
is one line that says what to do."""
import json
import os
import subprocess

import lib
from lib import load_trace


def tracer(*args, env=None, timeout=60):
    p = subprocess.run([lib.TRACER] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout, env=dict(os.environ, **env) if env else None)
    return p.returncode, p.stderr


def one_line(err):
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("tracer: "), err
    return lines[0]


def sleeper():
    p = subprocess.Popen(["sleep", "60"])
    lib._procs.append(p)
    return p.pid


def test_no_pack_fits_says_how_to_probe(tmp):
    """"recording 0 functions ... packs: none" and an empty table said nothing of what to do:
    the summary names `tracer list` for the target and -u."""
    pid = sleeper()
    rc, err = tracer("-p", pid, "-d", "0.3", "-o", os.path.join(tmp, "a.json"))
    assert rc == 0, err
    assert "packs: none" in err, err
    assert f"`tracer list -p {pid}` lists the ones it can probe; record them with " \
        "-u CATEGORY:OBJECT:FUNCTION" in err, err
    rc, err = tracer("-o", os.path.join(tmp, "b.json"), "--", "sleep", "0.3")
    assert rc == 0, err
    assert "`tracer list sleep` lists the ones it can probe" in err, err
    # with a pack that fits, no such line
    rc, err = tracer("-p", sleeper(), "-d", "0.3", "-u", "other:*:nanosleep*", "-o",
                     os.path.join(tmp, "c.json"))
    assert rc == 0 and "tracer list" not in err, err


def test_pids_as_pidof_gives_them(tmp):
    """`-p $(pidof x)` with two processes: unquoted the second pid came as an argument of its
    own ("unexpected argument"); quoted, with a blank between. Both trace every pid, as
    `-p A,B` does (perf's form)."""
    a, b = sleeper(), sleeper()
    for i, args in enumerate((["-p", a, b], ["-p", f"{a} {b}"], ["-p", f"{a},{b}"])):
        out = os.path.join(tmp, f"{i}.json")
        rc, err = tracer(*args, "-d", "0.3", "-q", "-o", out)
        assert rc == 0, (args, err)
        pids = [t["pid"] for t in load_trace(out)[0]["metadata"]["targets"]]
        assert pids == [a, b], (args, pids)


@lib.offline
def test_usage_errors_say_what_to_do(tmp):
    cases = [
        # perf's idiom: the command gives the duration
        (["-p", "1", "--", "sleep", "5"], "not both: -d 5 records the process as long as "
                                          "-- sleep 5 would"),
        (["-p", "1", "--", "ls"], "not both (-d DUR records for a while)"),
        (["--duraton", "5", "-p", "1"], "unknown option '--duraton'; did you mean: --duration"),
        (["-p", "1", "--outptu=x.json"], "unknown option '--outptu=x.json'; did you mean: "
                                         "--output"),
        (["report", "--tpo", "3", "x.json"], "did you mean: --top"),
        (["merge", "--outptu", "m.json", "a.json"], "did you mean: --output"),
        (["diff", "--jsno", "a.json", "b.json"], "did you mean: --json"),
        (["-p", "1", "2", "x"], "unexpected argument 'x'"),
        (["-p", "1", "-d", "1", "2"], "unexpected argument '2'"),
        (["-p", ", "], "bad pid list"),
    ]
    for args, want in cases:
        rc, err = tracer(*args)
        assert rc == 2 and want in one_line(err), (args, rc, err)


def test_no_btf_says_so(tmp):
    """Without the kernel's BTF libbpf fails with "No such process"; tracer says what is
    missing and what to do, before it starts anything. TRACER_KERNEL_BTF names the file to
    look for (here one that is not there) so that the real one stays."""
    missing = os.path.join(tmp, "vmlinux")
    for args in (["-p", sleeper(), "-d", "1"], ["--", "true"]):
        rc, err = tracer(*args, "-o", os.path.join(tmp, "t.json"),
                         env={"TRACER_KERNEL_BTF": missing})
        line = one_line(err)
        assert rc == 1 and f"the kernel has no BTF ({missing} is missing)" in line, err
        assert "CONFIG_DEBUG_INFO_BTF=y" in line, line
        assert not os.path.exists(os.path.join(tmp, "t.json"))
