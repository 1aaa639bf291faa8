// SPDX-License-Identifier: MIT
#include "record/top.h"
#include "record/recording.h"
#include "analyze/summary.h"
#include "util/util.h"
#include "tracer.skel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define FRAME_NS 1000000000ull
#define ALT_SCREEN_ON "\033[?1049h\033[?25l" /* and the cursor hidden */
#define ALT_SCREEN_OFF "\033[?25h\033[?1049l"

void top__start(struct top *t)
{
	struct termios raw;

	t->on = true;
	t->tty = isatty(STDOUT_FILENO);
	if (isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &t->saved)) {
		raw = t->saved;
		raw.c_lflag &= ~(ICANON | ECHO); /* keys one at a time; Ctrl-C still signals */
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		t->raw_keys = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	if (t->tty) {
		fputs(ALT_SCREEN_ON, stdout);
		fflush(stdout);
	}
}

bool top__key(struct top *t)
{
	char buf[64];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

	if (n <= 0)
		return n == 0; /* end of input: nothing can ask any more */
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 'q' || buf[i] == 'Q' || buf[i] == 4 /* Ctrl-D */)
			return true;
	return false;
}

/* The window's size; a pipe gets every line whole. */
static void window(const struct top *t, int *rows, int *cols)
{
	struct winsize ws;

	*rows = *cols = 0;
	if (t->tty && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* The frame's text, cut to the window: each line to its width (by characters, not bytes),
 * as many lines as fit. */
static void put_fitted(const char *text, int rows, int cols)
{
	int row = 0;

	for (const char *l = text; *l && (!rows || row < rows); row++) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l), bytes = 0;
		int chars = 0;

		while (bytes < len && (!cols || chars < cols)) {
			bytes++; /* a UTF-8 sequence is one character: its continuation bytes follow */
			while (bytes < len && (l[bytes] & 0xc0) == 0x80)
				bytes++;
			chars++;
		}
		fwrite(l, 1, bytes, stdout);
		fputs(rows ? "\033[K" : "", stdout);
		if (!rows || row + 1 < rows)
			fputc('\n', stdout);
		l = end ? end + 1 : l + len;
	}
	if (rows)
		fputs("\033[J", stdout); /* what the last frame had below */
}

void top__draw(struct top *t, struct recording *r, uint64_t now)
{
	uint64_t counters[CNT_MAX], interval = t->last_draw ? now - t->last_draw : now - r->t0;
	uint64_t spans;
	char *text = NULL, el[32], comm[4 * COMM_LEN];
	size_t len = 0;
	int rows, cols;
	FILE *f;

	if (!t->on || (t->last_draw && now - t->last_draw < FRAME_NS))
		return;
	f = open_memstream(&text, &len);
	if (!f)
		return;
	recording__read_counters(r, counters);
	/* the probes' and Python's */
	spans = counters[CNT_SPANS] + r->consumer.summary.py_spans + r->consumer.summary.gil_spans;
	window(t, &rows, &cols);
	/* what to press first: a narrow window cuts the end of the line */
	fprintf(f, "tracer top%s: %s, %zu function%s, %s, %llu spans (%.0f/s), %u threads",
		t->raw_keys ? " (q quits)" : "",
		r->tracked.ntargets == 1 && r->tracked.targets[0].pid
			? printable(r->tracked.targets[0].comm, comm, sizeof(comm))
			: "targets",
		r->tracked.attachment.nprobes, plural_s(r->tracked.attachment.nprobes),
		fmt_duration(now - r->t0, el, sizeof(el)), (unsigned long long)spans,
		interval ? (spans - t->last_spans) / (interval / 1e9) : 0,
		r->consumer.threads.cnt);
	if (counters[CNT_LOST_SPAN] + counters[CNT_LOST_SWITCH])
		fprintf(f, "  LOST %llu", (unsigned long long)(counters[CNT_LOST_SPAN] +
							       counters[CNT_LOST_SWITCH]));
	fputc('\n', f);
	summary__print_stages(f, &r->consumer.threads, now);
	fputc('\n', f);
	summary__print_recent(f, &r->consumer.summary, interval, now, r->opts->top_sort,
			      rows ? (rows > 20 ? (size_t)rows - 20 : 3) : 20);
	fclose(f);
	if (t->tty)
		fputs("\033[H", stdout);
	put_fitted(text, rows, cols);
	if (!t->tty)
		fputc('\n', stdout); /* frames apart */
	fflush(stdout);
	free(text);
	t->last_draw = now;
	t->last_spans = spans;
}

void top__stop(struct top *t)
{
	if (!t->on)
		return;
	if (t->tty) {
		fputs(ALT_SCREEN_OFF, stdout);
		fflush(stdout);
	}
	if (t->raw_keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	t->on = t->raw_keys = false;
}
