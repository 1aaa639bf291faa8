"""Row 4b of bench/bench.py: a pack of 10,000 probes on a program of 70,000 functions, in launch
mode: the time from start to "recording" (resolving the specs, choosing the sites, attaching),
while the launched program waits at its entry. The program is generated as assembly
(tests/unit/fixtures/gen_funcs.py); the pack names 10,000 of its functions, drawn with a fixed
seed. b is the harness (bench.py): its helpers and settings."""
import json
import os
import random
import subprocess
import sys
import time

SEC = "4b. a large pack"
FUNCS, PROBES = 70000, 10000


def build(b):
    """The program and the pack, in b.TMP."""
    gen = os.path.join(b.ROOT, "tests", "unit", "fixtures", "gen_funcs.py")
    prog, asm = os.path.join(b.TMP, "many"), os.path.join(b.TMP, "many.s")
    with open(asm, "w") as f:
        subprocess.run([sys.executable, gen, str(FUNCS)], stdout=f, check=True)
    subprocess.run(["cc", "-o", prog, asm], check=True)
    pack = os.path.join(b.TMP, "many.json")
    picked = random.Random(1).sample(range(FUNCS), PROBES)
    with open(pack, "w") as f:
        json.dump({"name": "many", "description": "bench row 4b", "probes": [
            {"object": "many", "function": f"f_{k}", "category": "operator"}
            for k in picked]}, f, indent=0)
    return prog, pack


def run(b):
    b.log(f"{SEC}")
    prog, pack = build(b)
    out = os.path.join(b.TMP, "many-trace.json")
    t0 = time.monotonic()
    proc = b.Proc([b.TRACER, "-P", pack, "--max-overhead", "0", "-o", out, "--", prog,
                   str(FUNCS)])
    try:
        proc.wait_ready(900)
        took = proc.t_ready - t0
        if proc.wait(300) != 0:
            raise RuntimeError(f"tracer exited {proc.status}: {proc.text()[-1500:]}")
    finally:
        proc.kill()
    spans = b.trace_metadata(out)["counts"]["spans"]
    b.row(SEC, f"{PROBES:,} probes on {FUNCS:,} functions (launch mode), start to 'recording'",
          f"{took:.1f} s; {spans:,} spans (one call of each function)", "", "", "< 5 s",
          "met" if took < 5 and spans == PROBES else "NOT met")
