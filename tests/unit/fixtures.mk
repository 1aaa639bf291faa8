# SPDX-License-Identifier: MIT
# Fixture binaries for tests/unit/test_elf_syms.c and test_elf_hostile.c. Included from the top Makefile, which defines
# OUTPUT; builds into $(OUTPUT)/fixtures/ with $(CC). The test takes that directory as argv[1].
# Fixtures use their own flags, not CFLAGS: the test depends on how they are linked.
# Q and msg (quiet output) come from the includer; unset, commands are echoed.

UNIT_FIXTURES_SRC := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))/fixtures
UNIT_FIXTURES_OUT := $(OUTPUT)/fixtures
UNIT_FIXTURES_CFLAGS := -O1 -g -Wall -Wextra
STRIP ?= strip

UNIT_FIXTURES := \
	$(UNIT_FIXTURES_OUT)/libfix.so \
	$(UNIT_FIXTURES_OUT)/libfix-stripped.so \
	$(UNIT_FIXTURES_OUT)/libfix-based.so \
	$(UNIT_FIXTURES_OUT)/fix_exe_pie \
	$(UNIT_FIXTURES_OUT)/fix_exe_nopie \
	$(UNIT_FIXTURES_OUT)/fix_go_note \
	$(UNIT_FIXTURES_OUT)/fix_go_buildinfo \
	$(UNIT_FIXTURES_OUT)/fix_many

UNIT_FIXTURES_LIB_SRC := $(addprefix $(UNIT_FIXTURES_SRC)/,libfix.c libfix.map magic.h)

$(UNIT_FIXTURES_OUT)/stamp: $(UNIT_FIXTURES)
	$(Q)touch $@

$(UNIT_FIXTURES_OUT)/libfix.so: $(UNIT_FIXTURES_LIB_SRC)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_FIXTURES_CFLAGS) -fPIC -shared \
		-Wl,--version-script=$(UNIT_FIXTURES_SRC)/libfix.map -o $@ $<

# Linked at a non-zero base, so that file offsets differ from addresses as in a non-PIE binary.
$(UNIT_FIXTURES_OUT)/libfix-based.so: $(UNIT_FIXTURES_LIB_SRC)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_FIXTURES_CFLAGS) -fPIC -shared -Wl,-Ttext-segment=0x10000000 \
		-Wl,--version-script=$(UNIT_FIXTURES_SRC)/libfix.map -o $@ $<

# Only .dynsym is left.
$(UNIT_FIXTURES_OUT)/libfix-stripped.so: $(UNIT_FIXTURES_OUT)/libfix.so
	$(call msg,STRIP,$@)
	$(Q)$(STRIP) --strip-all -o $@ $<

$(UNIT_FIXTURES_OUT)/fix_exe_pie: $(UNIT_FIXTURES_SRC)/fix_exe.c $(UNIT_FIXTURES_SRC)/magic.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_FIXTURES_CFLAGS) -fPIE -pie -o $@ $<

$(UNIT_FIXTURES_OUT)/fix_exe_nopie: $(UNIT_FIXTURES_SRC)/fix_exe.c $(UNIT_FIXTURES_SRC)/magic.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_FIXTURES_CFLAGS) -fno-pie -no-pie -o $@ $<

$(UNIT_FIXTURES_OUT)/fix_go_note: $(UNIT_FIXTURES_SRC)/fix_go.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_FIXTURES_CFLAGS) -o $@ $<

$(UNIT_FIXTURES_OUT)/fix_go_buildinfo: $(UNIT_FIXTURES_SRC)/fix_go.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_FIXTURES_CFLAGS) -DFIX_GO_BUILDINFO -o $@ $<

# 20,000 functions, generated as assembly (a C compiler takes minutes): tests/unit/test_resolve.c.
$(UNIT_FIXTURES_OUT)/fix_many: $(UNIT_FIXTURES_SRC)/gen_funcs.py
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)python3 $< 20000 > $@.s
	$(Q)$(CC) -o $@ $@.s
	$(Q)rm -f $@.s
