# SPDX-License-Identifier: MIT
# Build: BPF objects -> one linked object -> one skeleton -> the tracer binary.
OUTPUT ?= .output
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
PKG_CONFIG ?= pkg-config
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
PREFIX ?= /usr/local
VERSION := 0.1.0

ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/;s/ppc64le/powerpc/;s/riscv64/riscv/')
LIBS := libbpf libelf zlib libcjson capstone libcurl
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(LIBS))
PKG_LIBS := $(shell $(PKG_CONFIG) --libs $(LIBS))
# Further libraries the userspace objects need (fragments in mk/ may add to it).
TRACER_LIBS := -lm -lpthread

CFLAGS ?= -g -O2
CFLAGS += -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -MMD -MP
CPPFLAGS += -I$(OUTPUT) -Ibpf -Iuserspace -DTRACER_VERSION='"$(VERSION)"' $(PKG_CFLAGS)
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -I$(OUTPUT) -Ibpf -MMD -MP

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_COMPAT_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf-compat/%.bpf.o,$(BPF_SRCS))
# userspace/main.c dispatches; every folder below it is one concern (userspace/README.md).
TRACER_SRCS := $(wildcard userspace/*.c userspace/*/*.c)
TRACER_OBJS := $(patsubst userspace/%.c,$(OUTPUT)/obj/%.o,$(TRACER_SRCS))
LIB_OBJS := $(filter-out $(OUTPUT)/obj/main.o,$(TRACER_OBJS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
TARGET_SRCS := $(wildcard tests/targets/*.c)
TARGET_BINS := $(patsubst tests/targets/%.c,$(OUTPUT)/targets/%,$(TARGET_SRCS))

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.PHONY: all clean install check check-offline golden-update guide-images unit test-bins demo
# the link is made on every run: another tree's make (OUTPUT=.output-san) may have moved it
.PHONY: tracer

all: tracer

tracer: $(OUTPUT)/tracer
	$(Q)ln -sf $(OUTPUT)/tracer tracer

$(OUTPUT) $(OUTPUT)/bpf $(OUTPUT)/bpf-compat $(OUTPUT)/tests $(OUTPUT)/targets:
	$(Q)mkdir -p $@

$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(OUTPUT)/vmlinux.h | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/tracer.bpf.o: $(BPF_OBJS)
	$(call msg,LINK-BPF,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(OUTPUT)/tracer.skel.h: $(OUTPUT)/tracer.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name tracer_bpf > $@

# The compat object, for kernels 5.10 to 5.16 (TRACER_COMPAT: bpf/tracer.bpf.h): the same
# programs, maps and variables, which userspace opens through tracer_bpf's skeleton
# (record/setup.c). The build stops if the two skeletons' structs differ.
$(OUTPUT)/bpf-compat/%.bpf.o: bpf/%.bpf.c $(OUTPUT)/vmlinux.h | $(OUTPUT)/bpf-compat
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DTRACER_COMPAT -c $< -o $@

$(OUTPUT)/tracer_compat.bpf.o: $(BPF_COMPAT_OBJS)
	$(call msg,LINK-BPF,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

skel_struct = sed -n '/^struct $(2) {/,/^};/p' $(1) | sed 's/$(2)/tracer_bpf/g'
$(OUTPUT)/tracer_compat.skel.h: $(OUTPUT)/tracer_compat.bpf.o $(OUTPUT)/tracer.skel.h
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name tracer_compat_bpf > $@
	$(Q)$(call skel_struct,$@,tracer_compat_bpf) > $@.struct
	$(Q)$(call skel_struct,$(OUTPUT)/tracer.skel.h,tracer_bpf) | cmp -s - $@.struct || \
		{ echo "$@: its struct differs from tracer_bpf's (TRACER_COMPAT changed a map," \
		       "program or variable)" >&2; rm -f $@; exit 1; }

# Everything in userspace may include the skeletons; generate them first.
$(OUTPUT)/obj/%.o: userspace/%.c | $(OUTPUT)/tracer.skel.h $(OUTPUT)/tracer_compat.skel.h $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(OUTPUT)/tracer: $(TRACER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(PKG_LIBS) $(TRACER_LIBS) -o $@

# Tests: unit binaries link the userspace objects they test; target programs are built with
# frame pointers so that every probed function starts with `push %rbp` (a cheap, emulated site).
$(OUTPUT)/tests/test_%: tests/unit/test_%.c $(LIB_OBJS) | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) $(filter %.c %.o,$^) $(PKG_LIBS) $(TRACER_LIBS) -ldl -o $@

$(OUTPUT)/targets/%: tests/targets/%.c | $(OUTPUT)/targets
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fno-omit-frame-pointer -fcf-protection=none -Wall -Wextra -pthread $< -o $@ -ldl

-include tests/unit/fixtures.mk
# Further parts of the build (benchmarks, fuzzers, ...), one file each.
-include $(wildcard mk/*.mk)

test-bins: tracer $(UNIT_BINS) $(TARGET_BINS) $(OUTPUT)/fixtures/stamp viewers

# CHECK_LOAD=N: with N busy loops running beside the tests (CI: one per CPU, once)
check: test-bins
	$(Q)scripts/as-root.sh python3 tests/run.py --output $(OUTPUT) \
		$(if $(CHECK_LOAD),--load $(CHECK_LOAD))

# as any user: unit tests and the tests that attach nothing (golden traces, format, docs)
check-offline: test-bins
	$(Q)python3 tests/run.py --output $(OUTPUT)

# after a deliberate change of report/export/merge/repair output: review the diff, commit
golden-update: tracer
	$(Q)tests/golden/update.sh $(abspath $(OUTPUT)/tracer)

demo: tracer $(OUTPUT)/targets/pipeline
	$(Q)scripts/demo.sh

install: $(OUTPUT)/tracer install-extras
	install -Dm755 $(OUTPUT)/tracer $(DESTDIR)$(PREFIX)/bin/tracer
	install -d $(DESTDIR)$(PREFIX)/share/tracer/probes
	install -m644 probes/*.json $(DESTDIR)$(PREFIX)/share/tracer/probes/

clean:
	$(call msg,CLEAN,)
	$(Q)rm -rf $(OUTPUT) tracer

-include $(OUTPUT)/obj/*.d $(OUTPUT)/obj/*/*.d $(OUTPUT)/bpf/*.d $(OUTPUT)/bpf-compat/*.d $(OUTPUT)/tests/*.d

# the README's guide screenshots, from real runs of its commands (review, then commit)
guide-images: test-bins
	$(Q)TRACER_UPDATE_GUIDES=1 scripts/as-root.sh python3 tests/run.py --output $(OUTPUT) test_guides
