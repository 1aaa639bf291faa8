// SPDX-License-Identifier: MIT
/* Fuzzes the ftrace text line parser (userspace/trace/ftrace_line.c) that report and merge run
 * on the "systemTraceEvents" of files from anywhere. The line is a copy of exactly its length,
 * so that ASan sees any read past it. Checks what merge relies on when it rewrites numbers in
 * place: every text span lies inside the line, and the digits there are the value parsed. */
#include "fuzz.h"
#include "trace/ftrace_line.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The span's text is a decimal number (leading zeros allowed) whose value is v: what merge
 * replaces with the value it maps v to. */
static void check_span(const char *line, size_t len, struct text_span s, int64_t v,
		       const char *what)
{
	char text[32], *end;

	if (!s.len)
		return;
	fuzz_check(s.off <= len && s.len <= len - s.off, "%s span %u+%u outside the line (%zu)",
		   what, s.off, s.len, len);
	fuzz_check(s.len < sizeof(text), "%s: a %u-byte number", what, s.len);
	memcpy(text, line + s.off, s.len);
	text[s.len] = 0;
	fuzz_check(strspn(text + (text[0] == '-'), "0123456789") == s.len - (text[0] == '-'),
		   "%s: span '%s' is not a number", what, text);
	fuzz_check(strtoll(text, &end, 10) == v && !*end, "%s: span says '%s', parsed %" PRId64,
		   what, text, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size ? size : 1);
	struct ftrace_line fl;

	memcpy(line, data, size);
	if (!ftrace_line__parse(line, size, &fl)) {
		fuzz_check(fl.kind >= FT_OTHER && fl.kind <= FT_WAKEUP_NEW, "kind %d", fl.kind);
		fuzz_check(memchr(fl.prev_state, 0, sizeof(fl.prev_state)) != NULL,
			   "prev_state not terminated");
		check_span(line, size, fl.tid_at, fl.tid, "tid");
		if (fl.tgid >= 0)
			check_span(line, size, fl.tgid_at, fl.tgid, "tgid");
		if (fl.ts_at.len)
			fuzz_check(fl.ts_at.off <= size && fl.ts_at.len <= size - fl.ts_at.off,
				   "ts span outside the line");
		if (fl.kind == FT_SWITCH) {
			check_span(line, size, fl.a_at, fl.prev_tid, "prev_pid");
			check_span(line, size, fl.b_at, fl.next_tid, "next_pid");
		} else if (fl.kind != FT_OTHER) {
			check_span(line, size, fl.a_at, fl.woken_tid, "pid");
		}
	}
	free(line);
	return 0;
}
