"""Rules the verifier does not enforce, checked on the linked BPF object.

Uprobe programs run preemptible, with only migration disabled: two programs can interleave on one
CPU. A per-CPU map value written from one with a plain store (a scratch record filled in steps, a
counter's `*v += 1`) can be overwritten or lose an increment when another program runs between
its load and its store. The race cannot be made to happen on demand, so this test reads the
instructions instead: in every program that can be preempted (uprobe, uretprobe, usdt, and the
subprograms in .text, which any program may call), a store through a pointer into a per-CPU map
value must be atomic (`lock ... +=`)."""
import glob
import os
import re
import shutil
import subprocess

import lib

PREEMPTIBLE = ("uprobe", "uretprobe", "usdt", "kprobe", "kretprobe", ".text")
LOOKUP = 1  # BPF_FUNC_map_lookup_elem


def percpu_maps(root):
    """Names of the per-CPU maps the BPF sources define."""
    names = set()
    for path in glob.glob(os.path.join(root, "bpf", "*.[ch]")):
        with open(path) as f:
            text = f.read()
        for body, name in re.findall(r"struct\s*\{([^{}]*)\}\s*(\w+)(?:\s+__weak)?\s+SEC\(\"\.maps\"\)",
                                     text):
            if "BPF_MAP_TYPE_PERCPU" in body:
                names.add(name)
    return names


def sections(obj):
    """{section: [(index, instruction text, relocated symbol or None)]} from llvm-objdump."""
    objdump = shutil.which("llvm-objdump") or shutil.which("llvm-objdump-14")
    if not objdump:
        raise lib.Skip("llvm-objdump is not installed (scripts/install-deps.sh installs llvm)")
    out = subprocess.run([objdump, "-dr", "--no-show-raw-insn", obj], check=True,
                         capture_output=True, text=True).stdout
    result, current = {}, None
    for line in out.splitlines():
        m = re.match(r"Disassembly of section (\S+):", line)
        if m:
            current = result.setdefault(m.group(1), [])
            continue
        m = re.match(r"\s+[0-9a-f]+:\s+R_BPF_64_64\s+(\S+)", line)
        if m and current:
            current[-1][2] = m.group(1)
            continue
        m = re.match(r"\s+(\d+):\s+(.*)", line)
        if m and current is not None:
            current.append([int(m.group(1)), m.group(2).strip(), None])
    return result


def unsafe_stores(insns, percpu):
    """Plain stores through a register (or a spilled copy) that holds a per-CPU map value
    pointer. A linear pass (each value's lookup and use are close together in what clang emits)
    that forgets the registers after an unconditional jump, since what follows is reached from
    elsewhere."""
    regs, slots, bad = {}, {}, []
    for index, text, reloc in insns:
        if re.match(r"(goto|exit)\b", text):
            regs = {}  # what follows is reached only by a jump: its registers are not these
            continue
        m = re.match(r"r(\d+) = 0 ll$", text)
        if m:
            regs[m.group(1)] = ("map", reloc) if reloc in percpu else None
            continue
        m = re.match(r"call (\d+)$", text)
        if m:
            r1 = regs.get("1")
            value = ("value", r1[1]) if m.group(1) == str(LOOKUP) and r1 and r1[0] == "map" else None
            for r in "012345":
                regs.pop(r, None)
            regs["0"] = value
            continue
        m = re.match(r"(lock )?\*\(u\d+ \*\)\(r(\d+) [+-] (-?\d+)\) (=|\+=|\|=|&=|\^=) (r\d+|-?\d+)$",
                     text)
        if m:
            atomic, base, off, _, src = m.groups()
            if base == "10":  # a spill: remember what the slot holds
                slots[off] = regs.get(src[1:]) if src.startswith("r") else None
            elif not atomic and regs.get(base) and regs[base][0] == "value":
                bad.append((index, text, regs[base][1]))
            continue
        m = re.match(r"r(\d+) = \*\(u64 \*\)\(r10 [+-] (-?\d+)\)$", text)
        if m:
            regs[m.group(1)] = slots.get(m.group(2))
            continue
        m = re.match(r"r(\d+) = r(\d+)$", text)
        if m:
            regs[m.group(1)] = regs.get(m.group(2))
            continue
        m = re.match(r"r(\d+) [+-]= -?\d+$", text)
        if m:
            continue  # a pointer moved within the value stays one
        m = re.match(r"[rw](\d+) ", text)
        if m and "=" in text.split(" ", 2)[1]:
            regs[m.group(1)] = None  # anything else written to a register: no longer a pointer
    return bad


def check(obj, percpu):
    found = []
    for name, insns in sections(obj).items():
        if name.startswith(PREEMPTIBLE):
            found += [(name,) + b for b in unsafe_stores(insns, percpu)]
    return found


@lib.offline
def test_no_plain_store_to_percpu_values_from_preemptible_programs(tmp):
    percpu = percpu_maps(lib.ROOT)
    # the rule is about these two: the counters the budget adds up, and the interrupt depth
    assert {"counters", "irq_depth"} <= percpu, percpu
    # both objects: the full one and the one for older kernels (TRACER_COMPAT)
    for name in ("tracer.bpf.o", "tracer_compat.bpf.o"):
        assert check(os.path.join(lib.OUTPUT, name), percpu) == [], name


@lib.offline
def test_the_rule_catches_a_plain_increment(tmp):
    """Negative control: count() as it was before it was made atomic."""
    insns = [[36, "r1 = 0 ll", "counters"], [38, "call 1", None],
             [39, "if r0 == 0 goto +3 <LBB0_76>", None],
             [40, "r1 = *(u64 *)(r0 + 0)", None], [41, "r1 += 1", None],
             [42, "*(u64 *)(r0 + 0) = r1", None]]
    assert [b[0] for b in unsafe_stores(insns, {"counters"})] == [42]
    # a scratch record spilled to the stack and filled later, as py_scratch was
    insns = [[1, "r1 = 0 ll", "py_scratch"], [3, "call 1", None],
             [4, "*(u64 *)(r10 - 16) = r0", None], [5, "call 14", None],
             [6, "r6 = *(u64 *)(r10 - 16)", None], [7, "r6 += 8", None],
             [8, "*(u32 *)(r6 + 4) = r0", None]]
    assert [b[0] for b in unsafe_stores(insns, {"py_scratch"})] == [8]
    # the atomic form and a store to a map that is not per-CPU pass
    insns[-1][1] = "lock *(u32 *)(r6 + 4) += r0"
    assert unsafe_stores(insns, {"py_scratch"}) == []
    insns[-1][1] = "*(u32 *)(r6 + 4) = r0"
    assert unsafe_stores(insns, {"counters"}) == []


def stack_chains(obj):
    """{program: bytes of stack its deepest call chain uses}, counted as the verifier of 6.1
    counts it: each function's frame rounded up to 32 bytes, and a bpf_loop callback (a .text
    function whose address is loaded, `rN = ADDR ll` relocated against .text) as a call."""
    objdump = shutil.which("llvm-objdump") or shutil.which("llvm-objdump-14")
    if not objdump:
        raise lib.Skip("llvm-objdump is not installed (scripts/install-deps.sh installs llvm)")
    out = subprocess.run([objdump, "-dr", "--no-show-raw-insn", obj], check=True,
                         capture_output=True, text=True).stdout
    funcs, text_at, cur, section, last = {}, {}, None, None, ""
    for line in out.splitlines():
        m = re.match(r"Disassembly of section (\S+):", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"([0-9a-f]+) <(\w+)>:", line)
        if m and not m.group(2).startswith("LBB"):
            cur = funcs.setdefault(m.group(2), {"stack": 0, "calls": set(), "text": False})
            if section == ".text":
                cur["text"] = True
                text_at[int(m.group(1), 16)] = m.group(2)
            continue
        if cur is None:
            continue
        m = re.search(r"R_BPF_64_32\s+(\w+)", line)
        if m:
            cur["calls"].add(m.group(1))
        m = re.search(r"R_BPF_64_64\s+\.text$", line)
        if m:
            cur["calls"].add(int(re.search(r"= (\d+) ll", last).group(1)))
        for off in re.findall(r"r10 - (\d+)", line):
            cur["stack"] = max(cur["stack"], int(off))
        last = line

    def depth(name):
        f = funcs[name]
        callees = [text_at.get(c, c) if isinstance(c, int) else c for c in f["calls"]]
        return (max(f["stack"], 1) + 31) // 32 * 32 + \
            max([depth(c) for c in callees if c in funcs], default=0)
    return {n: depth(n) for n, f in funcs.items() if not f["text"]}


@lib.offline
def test_stack_of_every_call_chain_fits_512_bytes(tmp):
    """6.1 (Debian 12) adds a bpf_loop callback's frame to its caller's chain and refuses a
    chain over 512 bytes: span_enter -> py_read -> walk_step once used 544 and no program
    loaded there at all (make check-kernels KERNELS=6.1 shows it; this kernel did not mind)."""
    chains = stack_chains(os.path.join(lib.OUTPUT, "tracer.bpf.o"))
    assert chains.get("span_enter", 0) > 224, chains  # it calls py_read, whose loop calls back
    over = {n: d for n, d in chains.items() if d > 512}
    assert over == {}, over
    chains = stack_chains(os.path.join(lib.OUTPUT, "tracer_compat.bpf.o"))
    assert "span_enter" in chains, chains
    over = {n: d for n, d in chains.items() if d > 512}
    assert over == {}, ("the programs for older kernels", over)
