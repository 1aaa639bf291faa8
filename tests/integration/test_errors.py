"""Bad input: one clear line on stderr and the right exit status (2 usage, 1 runtime)."""
import os
import re
import subprocess

import lib
from lib import run_tracer, sigusr1, start_pipeline, wait_exit, wait_probes_gone


def one_line(err):
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, f"want one line, got: {err!r}"
    assert lines[0].startswith("tracer: "), lines[0]
    return lines[0]


@lib.offline
def test_usage_errors(tmp):
    cases = [
        ([], "no target"),
        (["-p"], "needs a value"),
        (["-p", "abc"], "bad pid"),
        (["-p", "1", "--bogus"], "unknown option"),
        (["-p", "1", "-u", "decode:libx.so"], "CATEGORY:OBJECT:FUNCTION"),
        (["-p", "1", "-u", "decoder:libx.so:f"], "unknown category 'decoder'"),
        (["-p", "1", "-d", "soon"], "bad duration"),
        (["-p", "1", "--min-dur", "5 parsecs"], "bad --min-dur"),
        (["-p", "1", "--buffer-size", "3"], "power of two"),
    ]
    for args, want in cases:
        rc, err = run_tracer(*args)
        assert rc == 2, (args, rc, err)
        assert want in one_line(err), (args, err)


def test_runtime_errors(tmp):
    pl, pid = start_pipeline("--frames", "1")
    bad_pack = os.path.join(tmp, "bad.json")
    with open(bad_pack, "w") as f:
        f.write('{\n  "name": "bad",\n  "probes": [\n    { "function": "x", "category": "decode" },\n'
                '    { "function": "y", "category": "decod" }\n  ]\n}\n')
    cases = [
        (["-p", "999999999"], 2, "bad pid"),
        (["-p", "4000000"], 1, "no process with pid 4000000"),
        (["-p", "2"], 1, "kernel thread"),
        (["-p", str(os.getpid()), "-p", str(os.getpid())], 1, "given twice"),
        (["-p", pid, "-u", "decode:pipeline:decode_frme"], 1, "did you mean: decode_frame"),
        (["-p", pid, "-u", "decode:pipelin:decode_frame"], 1, "did you mean: pipeline"),
        (["-p", pid, "-P", "nosuchpack"], 1, "no probe pack 'nosuchpack'"),
        (["-p", pid, "-u", "other:libc.so.6:memcpy"], 1, "'memcpy' is an IFUNC"),
        (["-p", pid, "-P", bad_pack], 1, f"{bad_pack}:5: unknown category \"decod\""),
        (["-p", pid, "-P", "pipeline", "-o", "/nonexistent/dir/t.json"], 1, "cannot write"),
    ]
    for args, status, want in cases:
        rc, err = run_tracer(*map(str, args))
        assert rc == status, (args, rc, err)
        assert want in one_line(err), (args, err)
    assert wait_probes_gone()
    sigusr1(pid)
    rc, _, _ = wait_exit(pl)
    assert rc == 0


def test_needs_root(tmp):
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        lib.TRACER, "-p", "1"], capture_output=True, text=True)
    assert p.returncode == 1, p
    assert "need root" in one_line(p.stderr)


@lib.offline
def test_help(tmp):
    """`tracer help` lists every command (as `perf help` does); `tracer help CMD` is its --help."""
    p = subprocess.run([lib.TRACER, "help"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    for sub in ("record", "list", "packs", "report", "diff", "merge", "export", "repair", "push",
                "fleet", "help"):
        assert f"\n  {sub} " in p.stdout, (sub, p.stdout)
    for sub in ("report", "diff", "merge", "list"):
        h = subprocess.run([lib.TRACER, "help", sub], capture_output=True, text=True)
        direct = subprocess.run([lib.TRACER, sub, "--help"], capture_output=True, text=True)
        assert h.returncode == 0 and h.stdout == direct.stdout and h.stdout.startswith("Usage"), h
    rc, err = run_tracer("help", "rpeort")
    assert rc == 2, (rc, err)
    line = one_line(err)
    assert "no command 'rpeort'" in line and "did you mean: report" in line, line


def test_unreadable_packs_folder(tmp):
    """A packs folder that cannot be read is named as such, never as "no pack matches"."""
    missing = os.path.join(tmp, "no-such-packs")
    env = dict(os.environ, TRACER_PROBES=missing)
    for args in (["packs"], ["list", lib.target("pipeline")]):
        p = subprocess.run([lib.TRACER, *args], capture_output=True, text=True, env=env)
        assert p.returncode == 1, (args, p)
        assert f"cannot read the probe packs folder {missing}" in one_line(p.stderr), args
    pl, pid = start_pipeline("--frames", "1")
    out = os.path.join(tmp, "t.json")
    p = subprocess.run([lib.TRACER, "-p", str(pid), "-d", "0.3", "-o", out],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert f"cannot read the probe packs folder {missing}" in p.stderr, p.stderr
    assert "no probe pack matches" not in p.stderr, p.stderr
    lib.load_trace(out)
    sigusr1(pid)
    rc, _, _ = wait_exit(pl)
    assert rc == 0


def test_functions_the_kernel_refuses(tmp):
    """pthread_spin_lock starts with an instruction uprobes cannot take (`lock decl`: ENOTSUPP,
    "Unknown error 524" raw). Its probes move past it (to the `jne`) and it is traced; on its
    first instruction (TRACER_NO_SITE_MOVE) the others are traced and a warning names it, and
    alone it is one clear line."""
    pl, pid = start_pipeline("--frames", "1")
    out = os.path.join(tmp, "t.json")
    rc, err = run_tracer("-p", pid, "-d", "0.3", "-o", out, "-u",
                         "other:libc.so.6:pthread_spin_lock")
    assert rc == 0 and "refused" not in err, err
    site = [p for p in lib.load_trace(out)[0]["metadata"]["probes"]
            if p["function"] == "pthread_spin_lock"]
    assert site and site[0].get("site_past") == "lock dec", site

    def unmoved(*args):
        p = subprocess.run([lib.TRACER, *map(str, args)], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, TRACER_NO_SITE_MOVE="1"))
        return p.returncode, p.stderr

    rc, err = unmoved("-p", pid, "-d", "0.3", "-o", out, "-u", "other:libc.so.6:pthread_spin_*")
    assert rc == 0, err
    assert "refused uprobes on 1 function (ENOTSUPP: an instruction uprobes cannot handle): " \
        "pthread_spin_lock; traced without it" in err, err
    assert re.search(r"recording \d+ functions", err), err
    rc, err = unmoved("-p", pid, "-d", "0.3", "-o", out, "-u", "other:libc.so.6:pthread_spin_lock")
    assert rc == 1 and "refused uprobes on every function matched" in one_line(err), err
    assert "524" not in err
    assert wait_probes_gone()
    sigusr1(pid)
    rc, _, _ = wait_exit(pl)
    assert rc == 0


def test_single_stepped_sites_warned(tmp):
    """libc's printf family mostly starts with instructions the kernel single-steps (~10 us a
    call): one warning before attaching says how many; the sample pipeline's own functions
    (push-first) get none."""
    pl, pid = start_pipeline("--frames", "1")
    out = os.path.join(tmp, "t.json")
    rc, err = run_tracer("-p", pid, "-d", "0.2", "-o", out, "-u", "other:libc.so.6:*printf*")
    assert rc == 0, err
    m = re.search(r"warning: (\d+) of the (\d+) functions to probe start with an instruction "
                  r"the kernel single-steps", err)
    assert m and int(m.group(1)) >= 20 and int(m.group(1)) * 4 >= int(m.group(2)), err
    rc, err = run_tracer("-p", pid, "-d", "0.2", "-o", out, "-P", "pipeline")
    assert rc == 0 and "single-steps" not in err, err
    sigusr1(pid)
    rc, _, _ = wait_exit(pl)
    assert rc == 0


def test_kernel_without_a_bpf_feature(tmp):
    """A kernel without a BPF feature the programs need: one line naming each missing feature
    and the kernel it came in, not the verifier's bare "Invalid argument". Without the ring
    buffer (5.8) nothing is loaded; without task storage, cookies or bpf_loop (5.10 to 5.16)
    tracer records with its programs for older kernels, and that line is a warning before the
    recording starts, the spans all there. TRACER_NO_BPF_FEATURE takes features as missing
    here; make check-kernels runs the real probes on Debian 11's 5.10."""
    out = os.path.join(tmp, "k.json")
    p = subprocess.run([lib.TRACER, "-P", "pipeline", "-o", out, "--", lib.target("pipeline"),
                        "--frames", "5"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, TRACER_NO_BPF_FEATURE="ring buffer,bpf_loop"))
    assert p.returncode == 1, (p.returncode, p.stderr)
    line = one_line(p.stderr)
    assert re.fullmatch(r"tracer: kernel \S+ lacks BPF features tracer needs: "
                        + re.escape("ring buffer (5.8), bpf_loop (5.17); nothing can be recorded "
                                    "here: run tracer on Linux 5.17 or later"), line), line
    assert not os.path.exists(out)
    for missing, since in (("bpf_loop", "5.17"),
                           ("task storage in tracing programs,BPF cookies", "5.15")):
        p = subprocess.run([lib.TRACER, "-P", "pipeline", "-o", out, "--", lib.target("pipeline"),
                            "--frames", "5"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, TRACER_NO_BPF_FEATURE=missing))
        assert p.returncode == 0, (p.returncode, p.stderr)
        named = ", ".join(f"{m} ({'5.11' if 'storage' in m else since})"
                          for m in missing.split(","))
        warning = [l for l in p.stderr.splitlines() if l.startswith("tracer: warning: kernel")]
        assert warning == [f"tracer: warning: kernel {os.uname().release} lacks {named}: "
                           "recording with the programs for older kernels: no Python frames, "
                           f"calls by tracefs uprobe events (Linux {since} or later has it "
                           "all)"], p.stderr
        trace, _ = lib.load_trace(out)
        assert trace["metadata"]["bpf_programs"] == "compat"
        assert sum(e["name"] == "decode_frame" for e in lib.spans(trace)) == 5
