// SPDX-License-Identifier: MIT
#include "record/status.h"
#include "util/util.h"

#include <stdio.h>
#include <unistd.h>

void status__init(struct status *s, bool quiet)
{
	s->on = !quiet && isatty(STDERR_FILENO);
	s->shown = false;
	s->last_ns = s->last_spans = 0;
}

static const char *fmt_count(double v, char *buf, size_t len)
{
	if (v < 1e4)
		snprintf(buf, len, "%.0f", v);
	else if (v < 1e6)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else
		snprintf(buf, len, "%.2fM", v / 1e6);
	return buf;
}

void status__update(struct status *s, uint64_t now_ns, uint64_t elapsed_ns, uint64_t spans,
		    uint32_t threads, uint64_t lost, uint64_t bytes, bool paused)
{
	char t[32], rate[32], total[32];
	double dt;

	if (!s->on || now_ns - s->last_ns < 1000000000ull)
		return;
	dt = s->last_ns ? (now_ns - s->last_ns) / 1e9 : 1;
	/* no colours at all, so NO_COLOR holds; \r and erase-line keep it one line */
	fprintf(stderr, "\r\033[Krecording %s%s  spans %s (%s/s)  threads %u  lost %llu  file %.1f MB",
		fmt_duration(elapsed_ns, t, sizeof(t)), paused ? " (paused)" : "",
		fmt_count(spans, total, sizeof(total)),
		fmt_count((spans - s->last_spans) / dt, rate, sizeof(rate)), threads,
		(unsigned long long)lost, bytes / 1e6);
	fflush(stderr);
	s->shown = true;
	s->last_ns = now_ns;
	s->last_spans = spans;
}

void status__clear(struct status *s)
{
	if (s->shown)
		fputs("\r\033[K", stderr);
	s->shown = false;
}
