# C++ test targets (tests/targets/*.cpp), built like the C ones: frame pointers and no
# -fcf-protection, so that every probed function starts with `push %rbp`.
CXX_TARGET_SRCS := $(wildcard tests/targets/*.cpp)
CXX_TARGET_BINS := $(patsubst tests/targets/%.cpp,$(OUTPUT)/targets/%,$(CXX_TARGET_SRCS))

$(OUTPUT)/targets/%: tests/targets/%.cpp | $(OUTPUT)/targets
	$(call msg,CXX,$@)
	$(Q)$(CXX) -g -O2 -fno-omit-frame-pointer -fcf-protection=none -Wall -Wextra -pthread \
		$< -o $@

test-bins: $(CXX_TARGET_BINS)

# The exception target under AddressSanitizer too (it intercepts __cxa_throw).
$(OUTPUT)/targets/cxx_throw_asan: tests/targets/cxx_throw.cpp | $(OUTPUT)/targets
	$(call msg,CXX,$@)
	$(Q)$(CXX) -g -O2 -fno-omit-frame-pointer -fcf-protection=none -fsanitize=address -Wall \
		-Wextra -pthread $< -o $@

test-bins: $(OUTPUT)/targets/cxx_throw_asan

# A plugin the spawner target loads with dlopen after tracer attached.
$(OUTPUT)/targets/libplugin.so: tests/targets/plugin/plugin.c | $(OUTPUT)/targets
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fPIC -shared -fno-omit-frame-pointer -fcf-protection=none $< -o $@

test-bins: $(OUTPUT)/targets/libplugin.so

# Moved probe sites: hand-written single-stepped prologues, and C built as Ubuntu and Fedora
# build it (-fcf-protection=full: endbr64 first).
$(OUTPUT)/targets/prologues: tests/targets/prologues.c | $(OUTPUT)/targets
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fcf-protection=full -Wall -Wextra $< -o $@

# The sample pipeline: several files (tests/targets/pipeline/), built like the other targets.
PIPELINE_SRCS := $(wildcard tests/targets/pipeline/*.c)
$(OUTPUT)/targets/pipeline: $(PIPELINE_SRCS) tests/targets/pipeline/pipeline.h | $(OUTPUT)/targets
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fno-omit-frame-pointer -fcf-protection=none -Wall -Wextra -pthread \
		$(PIPELINE_SRCS) -o $@

test-bins: $(OUTPUT)/targets/pipeline

# Exits moved back from single-stepped `ret`s: C++ built as Debian builds its packages (the
# stack protector, no frame pointers), with hand-written epilogues besides.
$(OUTPUT)/targets/cxx_epilogues: tests/targets/cxx_epilogues.cpp | $(OUTPUT)/targets
	$(call msg,CXX,$@)
	$(Q)$(CXX) -g -O2 -fstack-protector-strong -Wall -Wextra $< -o $@

# ... and as Ubuntu builds (CET: endbr64 first, PLT stubs in .plt.sec)
$(OUTPUT)/targets/cxx_epilogues_cet: tests/targets/cxx_epilogues.cpp | $(OUTPUT)/targets
	$(call msg,CXX,$@)
	$(Q)$(CXX) -g -O2 -fstack-protector-strong -fcf-protection=full -Wl,-z,ibtplt -Wall \
		-Wextra $< -o $@

test-bins: $(OUTPUT)/targets/cxx_epilogues_cet
check-kernels: $(OUTPUT)/targets/cxx_epilogues

# the C++ targets' shared start (a change rebuilds them)
$(CXX_TARGET_BINS) $(OUTPUT)/targets/cxx_throw_asan: tests/targets/ready.h
