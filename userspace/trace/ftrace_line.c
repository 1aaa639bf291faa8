// SPDX-License-Identifier: MIT
/* The scheduler's ftrace text line, both ways: the recorder prints it, report and merge parse
 * it. One module, so that what is written is what is read. */
#include "trace/ftrace_line.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- writing ---------------------------------------------------------------------------- */

/* ftrace's text format, in the form both importers' line parsers accept (Perfetto's
 * systrace_line_tokenizer and catapult's ftrace_importer with tgid): "comm-tid (tgid) [cpu] flags
 * secs: event: payload". A comm keeps the kernel's text; characters that would break those
 * parsers (white space, brackets, control bytes) become '_'. */
static void ftrace_comm(char out[COMM_LEN], const char *comm)
{
	int i;

	for (i = 0; i < COMM_LEN - 1 && comm[i]; i++) {
		unsigned char c = comm[i];

		out[i] = c <= ' ' || c == 0x7f || c == '[' || c == ']' ? '_' : c;
	}
	if (!i)
		out[i++] = '?';
	out[i] = 0;
}

static void ftrace_tgid(char out[16], uint32_t tgid)
{
	if (tgid)
		snprintf(out, 16, "%7u", tgid);
	else
		snprintf(out, 16, "  -----");
}

/* Nanoseconds: Perfetto reads any number of decimals, catapult too. */
static void ftrace_ts(char out[32], uint64_t rel_ns)
{
	snprintf(out, 32, "%llu.%09llu", (unsigned long long)(rel_ns / 1000000000),
		 (unsigned long long)(rel_ns % 1000000000));
}

/* The letters both importers know. sched_switch passes the raw __state: a preempted task is
 * runnable whatever it says, and TASK_NOLOAD marks an idle wait rather than a blocked one. */
const char *ftrace_prev_state(uint32_t state, bool preempt)
{
	if (preempt)
		return "R+";
	if (!state)
		return "R";
	if (state & 0x400 /* TASK_NOLOAD */)
		return "S";
	if (state & 1)
		return "S";
	if (state & 2)
		return "D";
	if (state & 4)
		return "T";
	if (state & 8)
		return "t";
	if (state & 0x20)
		return "Z";
	if (state & (0x10 | 0x80))
		return "X";
	return "S";
}

int ftrace_line__print_switch(FILE *f, uint64_t rel_ns, const struct switch_rec *r)
{
	char prev[COMM_LEN], next[COMM_LEN], ts[32], tgid[16];

	ftrace_comm(prev, r->prev_comm);
	ftrace_comm(next, r->next_comm);
	ftrace_tgid(tgid, r->prev_pid);
	ftrace_ts(ts, rel_ns);
	return fprintf(f,
		"%16s-%-7u (%s) [%03u] d..2 %s: sched_switch: prev_comm=%s prev_pid=%u "
		"prev_prio=%u prev_state=%s ==> next_comm=%s next_pid=%u next_prio=%u\n",
		prev, r->prev_tid, tgid, r->cpu, ts, prev, r->prev_tid, r->prev_prio,
		ftrace_prev_state(r->prev_state, r->preempt), next, r->next_tid, r->next_prio);
}

/* Perfetto reads sched_waking, catapult sched_wakeup (with success=): both are written. */
int ftrace_line__print_wakeup(FILE *f, uint64_t rel_ns, const struct wakeup_rec *r)
{
	static const char *const kinds[] = { "sched_waking", "sched_wakeup", "sched_wakeup_new" };
	char comm[COMM_LEN], waker[COMM_LEN], ts[32], tgid[16];

	ftrace_comm(comm, r->comm);
	ftrace_comm(waker, r->waker_comm);
	ftrace_tgid(tgid, r->waker_pid);
	ftrace_ts(ts, rel_ns);
	/* as ftrace flags it: 'h' in a hard interrupt, 's' in a soft one (the task is only the
	 * one that was interrupted) */
	return fprintf(f,
		"%16s-%-7u (%s) [%03u] d.%c2 %s: %s: comm=%s pid=%u prio=%u%s target_cpu=%03u\n",
		waker, r->waker_tid, tgid, r->cpu,
		r->irq == WAKE_HARDIRQ ? 'h' : r->irq == WAKE_SOFTIRQ ? 's' : '.', ts,
		kinds[r->kind % 3], comm, r->tid, r->prio,
		r->kind == WAKEUP_WAKING ? "" : " success=1", r->target_cpu);
}

/* ---- reading ---------------------------------------------------------------------------- */

static const char *skip_ws_mem(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

static bool digits(const char *p, const char *end, int64_t *v, const char **after)
{
	const char *s = p;

	*v = 0;
	while (p < end && *p >= '0' && *p <= '9' && p - s < 18)
		*v = *v * 10 + (*p++ - '0');
	*after = p;
	return p > s;
}

static const char *find(const char *p, const char *end, const char *needle)
{
	size_t n = strlen(needle);

	for (; p + n <= end; p++)
		if (*p == needle[0] && !memcmp(p, needle, n))
			return p;
	return NULL;
}

/* The number after key (e.g. " next_pid="), searched from p. */
static bool field(const char *line, const char *p, const char *end, const char *key, int64_t *v,
		  struct text_span *where)
{
	const char *k = find(p, end, key), *after;

	if (!k)
		return false;
	k += strlen(key);
	if (!digits(k, end, v, &after))
		return false;
	*where = (struct text_span){ (uint32_t)(k - line), (uint32_t)(after - k) };
	return true;
}

int ftrace_line__parse(const char *line, size_t len, struct ftrace_line *out)
{
	const char *end = line + len, *p, *cpu, *cpu_end, *task_end, *dash, *ts, *after, *ev;
	int64_t v, frac = 0;
	int fd = 0;

	memset(out, 0, sizeof(*out));
	out->tgid = -1;
	p = skip_ws_mem(line, end);
	if (p >= end || *p == '#')
		return -EINVAL;
	/* the CPU field " [NNN] " ends the task part, which may hold " (tgid)" */
	for (cpu = p; (cpu = find(cpu, end, " [")); cpu++) {
		if (digits(cpu + 2, end, &v, &after) && after < end && *after == ']')
			break;
	}
	if (!cpu)
		return -EINVAL;
	out->cpu = (int)v;
	cpu_end = after + 1;
	task_end = cpu;
	while (task_end > p && task_end[-1] == ' ')
		task_end--;
	if (task_end > p && task_end[-1] == ')') {
		const char *open = task_end - 1;

		while (open > p && *open != '(')
			open--;
		if (*open != '(')
			return -EINVAL;
		const char *t = skip_ws_mem(open + 1, task_end);

		if (digits(t, task_end, &v, &after)) {
			out->tgid = v;
			out->tgid_at = (struct text_span){ (uint32_t)(t - line),
							   (uint32_t)(after - t) };
		}
		task_end = open;
		while (task_end > p && task_end[-1] == ' ')
			task_end--;
	}
	/* "comm-tid": the tid follows the last '-' (no task at all: not an event) */
	if (task_end <= p)
		return -EINVAL;
	for (dash = task_end - 1; dash > p && *dash != '-'; dash--)
		;
	if (*dash != '-' || !digits(dash + 1, task_end, &out->tid, &after) || after != task_end)
		return -EINVAL;
	out->tid_at = (struct text_span){ (uint32_t)(dash + 1 - line),
					  (uint32_t)(after - dash - 1) };
	/* after "] ": optional flags, then "secs.frac: " */
	p = cpu_end;
	for (;;) {
		p = skip_ws_mem(p, end);
		if (p >= end)
			return -EINVAL;
		ts = p;
		if (digits(p, end, &v, &after) && after < end && *after == '.')
			break;
		/* "d.h2": the third flag says the line was printed in an interrupt */
		if (end - p > 3 && p[3] != ' ' && (p[2] == 'h' || p[2] == 's' || p[2] == 'H'))
			out->in_irq = true;
		while (p < end && *p != ' ')
			p++;
	}
	p = after + 1;
	while (p < end && *p >= '0' && *p <= '9') {
		if (fd < 9) {
			frac = frac * 10 + (*p - '0');
			fd++;
		}
		p++;
	}
	if (p >= end || *p != ':')
		return -EINVAL;
	for (; fd < 9; fd++)
		frac *= 10;
	if (v >= INT64_MAX / 1000000000) /* seconds beyond what nanoseconds hold: not a time */
		return -EINVAL;
	out->ts_ns = v * 1000000000 + frac;
	out->ts_at = (struct text_span){ (uint32_t)(ts - line), (uint32_t)(p - ts) };
	ev = skip_ws_mem(p + 1, end);
	p = find(ev, end, ":");
	if (!p)
		return -EINVAL;
#define IS_EVENT(s) ((size_t)(p - ev) == strlen(s) && !memcmp(ev, s, strlen(s)))
	if (IS_EVENT("sched_switch")) {
		const char *st;

		out->kind = FT_SWITCH;
		if (!field(line, p, end, " prev_pid=", &out->prev_tid, &out->a_at) ||
		    !field(line, p, end, " next_pid=", &out->next_tid, &out->b_at))
			return -EINVAL;
		st = find(p, end, " prev_state=");
		if (!st)
			return -EINVAL;
		st += strlen(" prev_state=");
		for (int i = 0; i < 3 && st < end && *st != ' '; i++)
			out->prev_state[i] = *st++;
	} else if (IS_EVENT("sched_waking") || IS_EVENT("sched_wakeup") ||
		   IS_EVENT("sched_wakeup_new")) {
		out->kind = IS_EVENT("sched_waking") ? FT_WAKING :
			    IS_EVENT("sched_wakeup") ? FT_WAKEUP :
						       FT_WAKEUP_NEW;
		if (!field(line, p, end, " pid=", &out->woken_tid, &out->a_at))
			return -EINVAL;
	} else {
		out->kind = FT_OTHER;
	}
#undef IS_EVENT
	return 0;
}
