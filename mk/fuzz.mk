# SPDX-License-Identifier: MIT
# Fuzzing and sanitizer builds (issue 6). Included by the top Makefile.
#
#   make fuzz         build the libFuzzer harnesses (tests/fuzz/fuzz_*.c) into $(OUTPUT)/fuzz/ and
#                     run each for FUZZ_SECONDS (default 20): short enough for CI. A finding
#                     fails the target and leaves its input in $(OUTPUT)/fuzz/artifacts/NAME/.
#   make fuzz-long    the same for FUZZ_LONG_SECONDS per harness (default 3600), with
#                     FUZZ_JOBS (default 2) processes each. Afterwards `make fuzz-merge` adds the
#                     inputs that reached new code to tests/fuzz/corpus/ (commit them).
#   make check-san    tracer, unit tests and fixtures built with AddressSanitizer and
#                     UndefinedBehaviorSanitizer into $(SAN_OUTPUT) (default $(OUTPUT)-san), then
#                     every unit and integration test run on them as root (scripts/as-root.sh,
#                     like `make check`; CHECK_LOAD=N adds N busy loops, as for check).
#
# Replay one input: $(OUTPUT)/fuzz/fuzz_NAME FILE.  Harnesses need clang's libFuzzer (clang >= 6).

FUZZ_CC ?= $(CLANG)
FUZZ_SECONDS ?= 20
FUZZ_LONG_SECONDS ?= 3600
FUZZ_JOBS ?= 2
FUZZ_DIR := $(OUTPUT)/fuzz
FUZZ_SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -std=gnu11 -D_GNU_SOURCE -Wall -Wextra \
	-Wno-unused-parameter $(FUZZ_SANITIZE)
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_NAMES))
# libFuzzer's options for every run: a hang is an input that takes 10 s; -rss_limit_mb bounds
# what one input may make the code allocate.
FUZZ_RUN_OPTS := -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
# ASan's defaults plus leak checking at exit of every run (libFuzzer also checks per input).
FUZZ_ENV := ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# The userspace files each harness tests (compiled again with coverage and sanitizers).
FUZZ_SRCS_probe_pack := probe/probe_spec probe/struct_fields util/util
FUZZ_SRCS_probe_spec := probe/probe_spec probe/struct_fields util/util
FUZZ_SRCS_elf_syms := elf/elf_syms
FUZZ_SRCS_json_escape := trace/json_text util/util
FUZZ_SRCS_trace_reader := trace/trace_reader trace/trace_input trace/json_value trace/json_text \
	trace/ftrace_line util/util
FUZZ_SRCS_merge := trace/merge trace/outfile trace/trace_file trace/trace_reader trace/trace_input \
	trace/json_value trace/json_text trace/ftrace_line util/util
FUZZ_SRCS_ftrace_line := trace/ftrace_line
FUZZ_SRCS_usdt := elf/usdt util/util
FUZZ_SRCS_py_linetable := python/py_code python/py_proc python/py_offsets python/py_debug_offsets \
	elf/elf_datasym util/util
# Small read buffers, so that inputs of a few KB cross buffer boundaries (where escapes and
# values are split); the code reads 1 MiB at a time otherwise.
FUZZ_OBJ_CFLAGS_trace/trace_reader := -DTRACE_READER_READ_SIZE=61
# The longest input worth trying (libFuzzer's default is 4096 or the largest seed).
FUZZ_MAXLEN_elf_syms := 65536
FUZZ_MAXLEN_probe_pack := 16384
FUZZ_MAXLEN_trace_reader := 65536
FUZZ_MAXLEN_merge := 65536
FUZZ_MAXLEN_usdt := 65536

.PHONY: fuzz fuzz-build fuzz-long fuzz-merge check-san

$(FUZZ_DIR)/obj:
	$(Q)mkdir -p $@

$(FUZZ_DIR)/obj/%.o: userspace/%.c | $(FUZZ_DIR)/obj
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) $(FUZZ_OBJ_CFLAGS_$*) -fsanitize=fuzzer-no-link \
		-MMD -MP -c $< -o $@

define fuzz_bin_rule
$(FUZZ_DIR)/fuzz_$(1): tests/fuzz/fuzz_$(1).c tests/fuzz/fuzz.h \
		$(patsubst %,$(FUZZ_DIR)/obj/%.o,$(FUZZ_SRCS_$(1))) | $(FUZZ_DIR)/obj
	$$(call msg,FUZZ-LD,$$@)
	$$(Q)$$(FUZZ_CC) $$(CPPFLAGS) -Itests/fuzz $$(FUZZ_CFLAGS) -fsanitize=fuzzer \
		$$(filter %.c %.o,$$^) $$(PKG_LIBS) -lm -o $$@
endef
$(foreach n,$(FUZZ_NAMES),$(eval $(call fuzz_bin_rule,$(n))))

fuzz-build: $(FUZZ_BINS)

# Each harness starts from the corpus in the repository and writes what it finds into
# $(FUZZ_DIR)/corpus/NAME (the first folder is where libFuzzer adds inputs): the repository's
# copy only changes through fuzz-merge.
define fuzz_run
	mkdir -p $(FUZZ_DIR)/corpus/$(1) $(FUZZ_DIR)/artifacts/$(1); \
	printf '  %-8s %s (%ss)\n' FUZZ $(1) $(2); \
	if $(FUZZ_ENV) $(FUZZ_DIR)/fuzz_$(1) $(FUZZ_RUN_OPTS) -max_total_time=$(2) $(3) \
		$(if $(FUZZ_MAXLEN_$(1)),-max_len=$(FUZZ_MAXLEN_$(1))) \
		$(if $(wildcard tests/fuzz/$(1).dict),-dict=tests/fuzz/$(1).dict) \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/$(1)/ \
		$(FUZZ_DIR)/corpus/$(1) $(wildcard tests/fuzz/corpus/$(1)) \
		>$(FUZZ_DIR)/$(1).log 2>&1; then \
		grep -h '^stat::number_of_executed_units\|^stat::peak_rss_mb' $(FUZZ_DIR)/$(1).log \
			| sed 's/^stat::/           /'; \
	else \
		echo "fuzz: $(1) found a problem; input in $(FUZZ_DIR)/artifacts/$(1)/, log:"; \
		tail -n 60 $(FUZZ_DIR)/$(1).log; \
		failed=1; \
	fi;
endef

fuzz: $(FUZZ_BINS)
	$(Q)failed=0; $(foreach n,$(FUZZ_NAMES),$(call fuzz_run,$(n),$(FUZZ_SECONDS),)) \
		test $$failed = 0

# Long runs: several processes per harness (-fork), and a finding does not end the run: every
# one is kept in artifacts/ and the target fails at the end if this run added any.
fuzz-long: $(FUZZ_BINS)
	$(Q)mkdir -p $(FUZZ_DIR)/artifacts && touch $(FUZZ_DIR)/long.stamp
	$(Q)failed=0; $(foreach n,$(FUZZ_NAMES),$(call fuzz_run,$(n),$(FUZZ_LONG_SECONDS),\
		-fork=$(FUZZ_JOBS) -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)) \
		new=$$(find $(FUZZ_DIR)/artifacts -type f -newer $(FUZZ_DIR)/long.stamp); \
		if [ -n "$$new" ]; then echo "fuzz-long: findings:"; echo "$$new"; failed=1; fi; \
		test $$failed = 0

# Adds to tests/fuzz/corpus/NAME only the inputs that cover something the corpus does not.
fuzz-merge: $(FUZZ_BINS)
	$(Q)$(foreach n,$(FUZZ_NAMES),mkdir -p tests/fuzz/corpus/$(n) && \
		$(FUZZ_ENV) $(FUZZ_DIR)/fuzz_$(n) -merge=1 \
		$(if $(FUZZ_MAXLEN_$(n)),-max_len=$(FUZZ_MAXLEN_$(n))) \
		tests/fuzz/corpus/$(n) $(FUZZ_DIR)/corpus/$(n) >$(FUZZ_DIR)/$(n).merge.log 2>&1 && \
		printf '  %-8s %s: %s files\n' MERGE $(n) "$$(ls tests/fuzz/corpus/$(n) | wc -l)" &&) true

-include $(FUZZ_DIR)/obj/*/*.d

# --- check-san: the whole test suite on a sanitized tracer -----------------------------------
SAN_OUTPUT ?= $(OUTPUT)-san
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# detect_leaks: tracer must free what it allocates, on every exit path.
# The BPF ring buffer and maps are mmap()ed by libbpf, which ASan neither tracks nor needs to.
SAN_ENV := \
	ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	TRACER_PROBES=$(CURDIR)/probes

# In the sub-make below (TRACER_SAN=1), every userspace object and test links the sanitizers.
ifdef TRACER_SAN
override CFLAGS += $(SAN_FLAGS)
override LDFLAGS += $(SAN_FLAGS)
endif

# The sub-make builds what `make check` builds (test-bins, with whatever other fragments add
# to it) except the ./tracer symlink, which points at the normal build: -o tracer leaves it be.
check-san:
	$(Q)$(MAKE) --no-print-directory -o tracer OUTPUT=$(SAN_OUTPUT) TRACER_SAN=1 \
		$(SAN_OUTPUT)/tracer test-bins
	$(Q)scripts/as-root.sh env $(SAN_ENV) python3 tests/run.py --output $(SAN_OUTPUT) \
		$(if $(CHECK_LOAD),--load $(CHECK_LOAD))
