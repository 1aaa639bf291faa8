#!/usr/bin/env bash
# Builds the ELF seeds of corpus/elf_syms/ (committed; run again only to change them): small
# objects of each kind elf_syms.c reads, and some cut or corrupted copies. Needs gcc and clang.
set -euo pipefail
out="$(dirname "$0")/corpus/elf_syms"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

cat >"$tmp/f.c" <<'C'
__attribute__((noinline)) int decode_frame(int x) { return x * 3 + 1; }
__attribute__((noinline)) int op_resize(int x) { return x ^ 5; }
static __attribute__((noinline, used)) int local_fn(int x) { return x - 1; }
int alias_fn(int x) __attribute__((alias("op_resize")));
static int impl(int x) { return x; }
static void *resolve(void) { return (void *)impl; }
int picked(int x) __attribute__((ifunc("resolve")));
#ifdef VERSIONS
__attribute__((noinline)) int read_v1(int x) { return x + 7; }
__attribute__((noinline)) int read_v2(int x) { return x + 8; }
__asm__(".symver read_v1, read_packet@V1");
__asm__(".symver read_v2, read_packet@@V2");
#endif
void _start(void) { for (;;) ; }
C
cat >"$tmp/f.map" <<'MAP'
V1 { global: read_packet; local: *; };
V2 { global: decode_frame; op_resize; alias_fn; picked; read_packet; } V1;
MAP
small="-Os -g0 -fno-asynchronous-unwind-tables -nostdlib -Wl,--build-id=none"
small="$small -Wl,-z,noseparate-code -Wl,-z,norelro"

gcc $small -DVERSIONS -fPIC -shared -Wl,--version-script="$tmp/f.map" "$tmp/f.c" -o "$out/lib.so"
strip --strip-all -o "$out/lib-stripped.so" "$out/lib.so"
gcc $small -fno-pie -no-pie -static "$tmp/f.c" -o "$out/exe-nopie"
gcc $small -fPIE -pie "$tmp/f.c" -o "$out/exe-pie"
gcc $small -Wl,-Ttext-segment=0x10000000 -fPIC -shared "$tmp/f.c" -o "$out/lib-based.so"
gcc -Os -g0 -DVERSIONS -c "$tmp/f.c" -o "$out/rel.o"
clang --target=i386-linux-gnu -Os -g0 -c "$tmp/f.c" -o "$out/rel32.o"
clang --target=aarch64-linux-gnu -Os -g0 -c "$tmp/f.c" -o "$out/rel-arm64.o"
# Go's markers: a .note.go.buildid note and a .go.buildinfo section
printf 'int main_main(void) { return 0; }\nvoid _start(void) { for (;;) ; }\n' >"$tmp/g.c"
gcc $small -fno-pie -no-pie -static "$tmp/g.c" -o "$tmp/g"
printf 'Go build ID: "x"' >"$tmp/note"
objcopy --add-section .note.go.buildid="$tmp/note" --add-section .go.buildinfo="$tmp/note" \
	"$tmp/g" "$out/go"

# Cut and corrupted copies of lib.so
size=$(stat -c %s "$out/lib.so")
head -c 64 "$out/lib.so" >"$out/cut-ehdr"
head -c 200 "$out/lib.so" >"$out/cut-phdrs"
head -c $((size / 2)) "$out/lib.so" >"$out/cut-half"
head -c $((size - 40)) "$out/lib.so" >"$out/cut-shdrs"
python3 - "$out/lib.so" "$out" <<'PY'
import struct, sys
src, out = sys.argv[1], sys.argv[2]
b = bytearray(open(src, "rb").read())
shoff, = struct.unpack_from("<Q", b, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3a)
def save(name, data):
    open(f"{out}/{name}", "wb").write(data)
def section(i):
    return shoff + i * shentsize
# every symbol table's sh_link pointing at itself, sh_entsize 0, and sh_size past the end
x = bytearray(b)
for i in range(shnum):
    o = section(i)
    typ, = struct.unpack_from("<I", x, o + 4)
    if typ in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
        struct.pack_into("<I", x, o + 40, i)
save("symtab-link-self", x)
x = bytearray(b)
for i in range(shnum):
    o = section(i)
    typ, = struct.unpack_from("<I", x, o + 4)
    if typ in (2, 11):
        struct.pack_into("<Q", x, o + 56, 0)
        struct.pack_into("<Q", x, o + 32, 0xffffffff)
save("symtab-huge", x)
# symbol names pointing beyond the string table, values of -1
x = bytearray(b)
for i in range(shnum):
    o = section(i)
    typ, = struct.unpack_from("<I", x, o + 4)
    if typ in (2, 11):
        off, size = struct.unpack_from("<QQ", x, o + 24)
        for s in range(off + 24, off + size, 24):
            struct.pack_into("<I", x, s, 0x7ffffff0)
            struct.pack_into("<Q", x, s + 8, 0xffffffffffffffff)
save("symbols-wild", x)
# e_phnum and e_shnum larger than the file, e_shstrndx out of range
x = bytearray(b); struct.pack_into("<H", x, 0x38, 0xffff); save("phnum-huge", x)
x = bytearray(b); struct.pack_into("<H", x, 0x3c, 0xfff0); save("shnum-huge", x)
x = bytearray(b); struct.pack_into("<H", x, 0x3e, 0x7777); save("shstrndx-bad", x)
# PT_LOAD with a p_filesz past the end and a p_offset near 2^64
x = bytearray(b)
phoff, = struct.unpack_from("<Q", x, 0x20)
phentsize, phnum = struct.unpack_from("<HH", x, 0x36)
for i in range(phnum):
    o = phoff + i * phentsize
    if struct.unpack_from("<I", x, o)[0] == 1:
        struct.pack_into("<Q", x, o + 8, 0xfffffffffffff000)
        struct.pack_into("<Q", x, o + 32, 0xffffffffffff)
save("load-wild", x)
PY
ls -l "$out"
