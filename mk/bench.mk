# SPDX-License-Identifier: MIT
# `make bench`: builds tracer and the benchmark tools into $(OUTPUT)/bench and runs every
# comparison of bench/bench.py (needs root), writing bench/results.md. `make bench QUICK=1` is a
# shorter, noisier run (about 6 minutes instead of 13). The tools are also built by test-bins:
# tests/integration/test_bench_tools.py checks them.
.PHONY: bench bench-tools

BENCH_OUT := $(OUTPUT)/bench
BENCH_TOOLS := $(BENCH_OUT)/loop $(BENCH_OUT)/floor $(BENCH_OUT)/writer_bench $(BENCH_OUT)/switcher \
	$(BENCH_OUT)/many_funcs

$(BENCH_OUT):
	$(Q)mkdir -p $@

# The loop target's probed functions are assembly, so no flags change their first instruction.
# No -g: `perf probe` looks functions up in DWARF when there is any, and finds none for them.
$(BENCH_OUT)/loop: bench/loop.c | $(BENCH_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -Wall -Wextra -pthread $< -o $@

# Row 10's scheduler target: threads only, no tracer code.
$(BENCH_OUT)/switcher: bench/switcher.c | $(BENCH_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -Wall -Wextra -pthread $< -o $@

# Row 4c's target: 1,000 functions, fn000 to fn999 (made by the preprocessor).
$(BENCH_OUT)/many_funcs: bench/many_funcs.c | $(BENCH_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -Wall -Wextra $< -o $@

# floor -s: the least span program (bench/least_span.bpf.c), through a skeleton of its own.
$(BENCH_OUT)/least_span.bpf.o: bench/least_span.bpf.c $(OUTPUT)/vmlinux.h | $(BENCH_OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BENCH_OUT)/least_span.skel.h: $(BENCH_OUT)/least_span.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name least_span_bpf > $@

$(BENCH_OUT)/floor: $(BENCH_OUT)/least_span.skel.h

$(BENCH_OUT)/%: bench/%.c $(LIB_OBJS) | $(BENCH_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -I$(BENCH_OUT) $(CFLAGS) $(filter %.c %.o,$^) $(PKG_LIBS) $(TRACER_LIBS) \
		-lm -o $@

bench-tools: $(BENCH_TOOLS)

test-bins: $(BENCH_TOOLS)

# BENCH_ARGS: more options, e.g. BENCH_ARGS='--only 1,2' or '--compare-tracer OTHER/tracer'.
# Row 1d paces a target of the tests (tests/targets/prologues.c, mk/targets.mk); row 1e runs
# tests/targets/cxx_throw.cpp and cxx_epilogues.cpp.
bench: $(OUTPUT)/tracer $(BENCH_TOOLS) $(OUTPUT)/targets/prologues $(OUTPUT)/targets/cxx_throw \
	$(OUTPUT)/targets/cxx_epilogues
	$(Q)scripts/as-root.sh python3 bench/bench.py --output $(OUTPUT) $(if $(QUICK),--quick) \
		--results bench/results.md $(BENCH_ARGS)

-include $(BENCH_OUT)/*.d
