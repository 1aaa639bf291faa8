# SPDX-License-Identifier: MIT
# Viewers and shipping extras: the offline trace viewer the browser tests open (speedscope, from
# the npm registry, pinned by tests/viewers/package-lock.json), and the man page and bash
# completion that `make install` installs.
.PHONY: viewers install-extras

MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
VIEWERS := $(OUTPUT)/viewers
SPEEDSCOPE := $(VIEWERS)/node_modules/speedscope/dist/release/index.html

viewers: $(SPEEDSCOPE)

# npm ci installs exactly what the lock file names (checked against its integrity hashes) and
# runs no install scripts; the copy keeps node_modules out of the source tree.
$(SPEEDSCOPE): tests/viewers/package.json tests/viewers/package-lock.json
	$(call msg,NPM,$(VIEWERS))
	$(Q)mkdir -p $(VIEWERS)
	$(Q)cp tests/viewers/package.json tests/viewers/package-lock.json $(VIEWERS)/
	$(Q)cd $(VIEWERS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
	$(Q)test -f $@ && touch $@

install-extras:
	install -Dm644 doc/tracer.1 $(DESTDIR)$(MANDIR)/man1/tracer.1
	install -Dm644 completion/tracer.bash $(DESTDIR)$(BASHCOMPDIR)/tracer
