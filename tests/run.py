#!/usr/bin/env python3
"""Runs every test: the unit-test binaries (.output/tests/test_*) and the integration tests
(tests/integration/test_*.py, functions named test_*). Prints one line per test and closes with
'N passed, N failed[, N skipped]'. Most integration tests attach real BPF programs and need
root; without root only those marked @lib.offline run (the offline commands on committed
traces, the format check, the docs) and the others are skipped, with one line saying why. CI
runs as root and skips nothing: with CI=true, a test skipped for want of root fails the run.

--load N keeps N processes spinning at the runner's priority for the whole run: the suite must
pass on a machine whose CPUs are all busy (CI runs it so once, with one per CPU).

TRACER_TEST_KEEP=DIR keeps a failed integration test's files (its traces, logs) in DIR/NAME,
for a failure that is rare to be looked at after the run."""
import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEEDS_ROOT = "needs root (it attaches BPF programs, or drives a browser or targets as root)"


def keep_files(tmp, name):
    """A failed test's files, copied where TRACER_TEST_KEEP says (a new folder each time)."""
    keep = os.environ.get("TRACER_TEST_KEEP")
    if keep:
        dest = os.path.join(keep, f"{name.replace(':', '.')}.{time.strftime('%H%M%S')}")
        shutil.copytree(tmp, dest, dirs_exist_ok=True)
        print(f"     files kept in {dest}")


def run_unit(output, only):
    results = []
    tests_dir = os.path.join(output, "tests")
    fixtures = os.path.join(output, "fixtures")
    for name in sorted(os.listdir(tests_dir)) if os.path.isdir(tests_dir) else []:
        path = os.path.join(tests_dir, name)
        if not name.startswith("test_") or name.endswith(".d") or not os.access(path, os.X_OK):
            continue
        if only and not any(o in name for o in only):
            continue
        p = subprocess.run([path, fixtures], cwd=ROOT, capture_output=True, text=True,
                           timeout=600)
        first, seen = len(results), 0
        for line in p.stdout.splitlines():
            if line.startswith("ok "):
                results.append(("pass", f"{name}:{line[3:]}", ""))
                seen += 1
            elif line.startswith("not ok "):
                results.append(("fail", f"{name}:{line[7:]}", p.stderr.strip()))
                seen += 1
        if p.returncode != 0 and (not seen or all(r[0] == "pass" for r in results[-seen:])):
            results.append(("fail", name, f"exit status {p.returncode}\n{p.stderr.strip()}"))
        elif not seen:  # a binary that tested nothing (or could not say so) is no pass
            results.append(("fail", name, f"printed no \"ok\" line\n{p.stderr.strip()}"))
        for r in results[first:]:
            report(r)
    return results


def report(r):
    status, name, detail = r
    print(f"{status.upper():4} {name}", flush=True)
    if status == "fail" and detail:
        lines = detail.splitlines()
        # a sanitizer's report says what and where in its first lines: keep them too
        head = next((i for i, l in enumerate(lines) if "ERROR: AddressSanitizer" in l
                     or "runtime error:" in l), None)
        if head is not None and head < len(lines) - 30:
            for line in lines[head:head + 30] + ["..."]:
                print(f"     {line}", flush=True)
        for line in lines[-30:]:
            print(f"     {line}", flush=True)


def run_integration(output, only):
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    import lib
    lib.configure(ROOT, output)
    results = []
    folder = os.path.join(ROOT, "tests", "integration")
    for fname in sorted(os.listdir(folder)):
        if not (fname.startswith("test_") and fname.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(fname[:-3], os.path.join(folder, fname))
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except Exception:
            r = ("fail", fname[:-3], traceback.format_exc())
            report(r)
            results.append(r)
            continue
        tests = [(n, f) for n, f in vars(mod).items() if n.startswith("test_") and callable(f)]
        tests.sort(key=lambda t: t[1].__code__.co_firstlineno)
        for n, f in tests:
            name = f"{fname[:-3]}:{n}"
            if only and not any(o in name for o in only):
                continue
            if os.geteuid() != 0 and not getattr(f, "offline", False):
                r = ("skip", name, NEEDS_ROOT)
            else:
                start = time.monotonic()
                with tempfile.TemporaryDirectory(prefix="tracer-test-",
                                                 ignore_cleanup_errors=True) as tmp:
                    try:
                        f(tmp)
                        r = ("pass", name, "")
                    except lib.Skip as e:
                        r = ("skip", name, str(e))
                    except Exception:
                        r = ("fail", name, traceback.format_exc())
                        keep_files(tmp, name)
                    finally:
                        lib.cleanup()
                name += f" ({time.monotonic() - start:.1f}s)"
                r = (r[0], name, r[2])
            report(r)
            if r[0] == "skip" and r[2] != NEEDS_ROOT:
                print(f"     {r[2]}")
            results.append(r)
    return results


def start_load(n):
    """n busy loops at the runner's priority (a shell's `while :`: no child left when killed)."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--output", default=".output")
    ap.add_argument("--unit-only", action="store_true")
    ap.add_argument("--load", type=int, default=0, metavar="N",
                    help="keep N busy loops running during the tests")
    ap.add_argument("only", nargs="*", help="run only tests whose name contains one of these")
    args = ap.parse_args()
    output = os.path.abspath(os.path.join(ROOT, args.output))
    load = start_load(args.load)
    try:
        results = run_unit(output, args.only)
        if not args.unit_only:
            results += run_integration(output, args.only)
    finally:
        for p in load:
            p.kill()
            p.wait()
    n = {s: sum(1 for r in results if r[0] == s) for s in ("pass", "fail", "skip")}
    attach = sum(1 for r in results if r[0] == "skip" and r[2] == NEEDS_ROOT)
    ci_unroot = attach and os.environ.get("CI") == "true"
    if ci_unroot:
        print(f"{attach} tests skipped for want of root under CI=true: CI must run every test; "
              "run the suite as root (make check and make check-san do, through "
              "scripts/as-root.sh)")
    elif attach:
        print(f"{attach} tests skipped: they need root (most attach BPF programs: uprobes need "
              "CAP_SYS_ADMIN); run as root to run them")
    if args.load:
        print(f"run with {args.load} busy loop{'s' if args.load > 1 else ''} beside it")
    line = f"{n['pass']} passed, {n['fail']} failed"
    if n["skip"]:
        line += f", {n['skip']} skipped"
    print(line)
    sys.exit(1 if n["fail"] or ci_unroot or not results else 0)


if __name__ == "__main__":
    main()
