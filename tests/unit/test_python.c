// SPDX-License-Identifier: MIT
/* Unit tests of the Python frames' userspace: the 3.11 location table (a table and the lines
 * CPython itself gives for it), spans from stack reads and their nesting with native spans, the
 * offsets table, code names freed and taken by others, and the USDT notes and operands
 * (checked against python3.11's own notes: every USDT site is a nop). */
#include "elf/usdt.h"
#include "python/py_code.h"
#include "python/py_debug_offsets.h"
#include "python/py_offsets.h"
#include "python/py_spans.h"
#include "unit.h"

#include <asm/ptrace.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* compile() of a 11-line function f (first line 1) by CPython 3.11.2: f.co_linetable, and the
 * line of each code unit from f.co_lines() */
static const uint8_t linetable[] = {
	0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80, 0x41, 0xd8, 0x07, 0x08, 0x88,
	0x31, 0x82, 0x75, 0x80, 0x75, 0xf0, 0x02, 0x01, 0x0d, 0x20, 0xf0, 0x00, 0x01, 0x0d, 0x20,
	0xdd, 0x16, 0x1b, 0x98, 0x41, 0x91, 0x68, 0x94, 0x68, 0xf0, 0x03, 0x01, 0x0d, 0x20, 0xf1,
	0x00, 0x01, 0x0d, 0x20, 0xf4, 0x00, 0x01, 0x0d, 0x20, 0x88, 0x01, 0x88, 0x01, 0xf0, 0x06,
	0x00, 0x0d, 0x11, 0x88, 0x01, 0xf5, 0x06, 0x00, 0x0c, 0x0d, 0x88, 0x51, 0xd8, 0x0d, 0x0e,
	0xf1, 0x03, 0x01, 0x0c, 0x10, 0xf4, 0x00, 0x01, 0x0c, 0x10, 0xf0, 0x00, 0x01, 0x05, 0x10,
};
static const int lines[] = {
	1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
	4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 7, 7, 10, 10, 10, 10, 10, 10, 10, 11, 10, 10, 10, 10, 10, 10,
	10, 10,
};

static void test_linetable(void)
{
	for (size_t u = 0; u < sizeof(lines) / sizeof(lines[0]); u++) {
		int got = py_linetable__line(linetable, sizeof(linetable), 1, u);

		if (got != lines[u])
			fprintf(stderr, "  unit %zu: line %d, CPython says %d\n", u, got, lines[u]);
		CHECK(got == lines[u]);
	}
	CHECK(py_linetable__line(linetable, sizeof(linetable), 1, 1000) == -1);
	CHECK(py_linetable__line(linetable, 3, 1, 40) == -1); /* cut short: no crash */
}

/* An 8-line function f (first line 1) compiled by CPython 3.8.18 (f.co_lnotab) and 3.10.13
 * (f.co_linetable), and the line of each instruction (2 bytes) from dis.findlinestarts() and
 * f.co_lines(): the same on both. */
static const uint8_t lnotab38[] = { 0, 1, 8, 1, 8, 1, 8, 2, 12, 1, 10, 1 };
static const uint8_t linetable310[] = { 8, 1, 8, 1, 8, 1, 12, 2, 10, 1, 4, 1 };
static const int lines38[] = {
	2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 8, 8,
};

static void test_lnotab(void)
{
	for (size_t i = 0; i < sizeof(lines38) / sizeof(lines38[0]); i++) {
		int a = py_lnotab__line(lnotab38, sizeof(lnotab38), 1, 2 * i);
		int b = py_linetable310__line(linetable310, sizeof(linetable310), 1, 2 * i);

		if (a != lines38[i] || b != lines38[i])
			fprintf(stderr, "  offset %zu: lines %d and %d, CPython says %d\n", 2 * i, a,
				b, lines38[i]);
		CHECK(a == lines38[i] && b == lines38[i]);
	}
	CHECK(py_linetable310__line(linetable310, sizeof(linetable310), 1, 1000) == -1);
	CHECK(py_linetable310__line(linetable310, 3, 1, 40) == -1); /* cut short: no crash */
	CHECK(py_lnotab__line(lnotab38, 3, 1, 40) == 2);	     /* the last whole pair's line */
}

struct got_span {
	int tid;
	uint64_t code, start, end;
	bool incomplete;
};

static struct got_span spans[64];
static int nspans;

static int nopened;

static uint64_t on_opened(void *ctx, int pid, const struct py_frame *f)
{
	nopened++;
	return f->code * 10; /* a tag the span must carry back */
}

static void on_span(void *ctx, int pid, int tid, const struct py_open *o, uint64_t end,
		    bool incomplete)
{
	CHECK(o->tag == o->code * 10);
	if (nspans < 64)
		spans[nspans++] = (struct got_span){ tid, o->code, o->start, end, incomplete };
}

static const struct py_spans_ops ops = { .opened = on_opened, .span = on_span };

/* A read at ts (for what reason) of frames given outermost first as (code, instr) pairs. */
static void read_stack(struct py_spans *s, int tid, uint64_t ts, int reason, int n,
		       const uint64_t *cf)
{
	struct py_stack_rec r = { .type = REC_PY_STACK, .reason = reason, .pid = 1, .tid = tid,
				  .ts = ts, .depth = n };

	for (int i = 0; i < n; i++) {
		r.frames[n - 1 - i].code = cf[2 * i];
		r.frames[n - 1 - i].instr = cf[2 * i + 1];
	}
	py_spans__on_read(s, &r, offsetof(struct py_stack_rec, frames) + n * sizeof(r.frames[0]));
}

static void read_same(struct py_spans *s, int tid, uint64_t ts, int reason)
{
	struct py_stack_rec r = { .type = REC_PY_STACK, .reason = reason, .pid = 1, .tid = tid,
				  .ts = ts, .flags = PY_SAME };

	py_spans__on_read(s, &r, offsetof(struct py_stack_rec, frames));
}

static const struct got_span *find(uint64_t code, int nth)
{
	for (int i = 0; i < nspans; i++)
		if (spans[i].code == code && !nth--)
			return &spans[i];
	return NULL;
}

#define TICK PY_READ_TICK
#define BLOCK PY_READ_BLOCK

static void test_spans(void)
{
	struct py_spans *s = py_spans__new(&ops, NULL);
	const struct got_span *g;
	struct py_open caller;

	nspans = 0;
	/* main -> a on ticks; a ends and b starts between the reads at 200 and 300: the middle */
	read_stack(s, 7, 100, TICK, 2, (uint64_t[]){ 1, 10, 2, 500 });
	read_stack(s, 7, 200, TICK, 2, (uint64_t[]){ 1, 10, 2, 520 }); /* a goes on */
	read_stack(s, 7, 300, TICK, 2, (uint64_t[]){ 1, 12, 3, 600 });
	CHECK(nspans == 1);
	CHECK((g = find(2, 0)) && g->start == 100 && g->end == 250 && g->tid == 7);
	/* b blocks at 330: the same stack, only the time is news */
	read_same(s, 7, 330, BLOCK);
	/* woken at 370, by the tick at 400 main called b again from elsewhere: the old b ends
	 * and the new one starts at the switch-in */
	py_spans__switch_in(s, 1, 7, 370);
	read_stack(s, 7, 400, TICK, 2, (uint64_t[]){ 1, 14, 3, 600 });
	CHECK((g = find(3, 0)) && g->start == 250 && g->end == 370);
	/* it finished and main called c, which blocks at 450: the edge is the block */
	read_stack(s, 7, 450, BLOCK, 2, (uint64_t[]){ 1, 16, 4, 10 });
	CHECK((g = find(3, 1)) && g->start == 370 && g->end == 450);
	/* recursion: the same code at two depths */
	py_spans__switch_in(s, 1, 7, 480);
	read_stack(s, 7, 500, TICK, 3, (uint64_t[]){ 1, 16, 4, 20, 4, 700 });
	read_stack(s, 7, 600, TICK, 2, (uint64_t[]){ 1, 16, 4, 30 });
	CHECK((g = find(4, 0)) && g->start == 480 && g->end == 550);

	/* a native span [650, 900] entered from c: its entry read at 650 is unchanged; a callback
	 * d seen at 700 inside it starts after 650 and ends no later than 900 */
	read_same(s, 7, 650, PY_READ_PROBE);
	read_stack(s, 7, 700, TICK, 3, (uint64_t[]){ 1, 16, 4, 40, 5, 50 });
	CHECK((g = find(5, 0)) == NULL);
	CHECK(py_spans__on_native(s, 1, 7, 650, 900, false, &caller));
	CHECK(caller.code == 4 && caller.instr == 40);
	CHECK((g = find(5, 0)) && g->start == 675 && g->end == 900);
	/* c outlives the native call, and whatever follows it starts after its return */
	read_stack(s, 7, 1000, TICK, 2, (uint64_t[]){ 1, 18, 6, 1 });
	CHECK((g = find(4, 1)) && g->start == 450 && g->end == 950);
	CHECK(!find(6, 0));
	/* a native span whose return is after the next read: its caller ends no earlier */
	read_stack(s, 7, 1100, TICK, 2, (uint64_t[]){ 1, 18, 6, 2 });
	CHECK(py_spans__on_native(s, 1, 7, 1050, 1180, false, &caller) && caller.code == 6);
	read_stack(s, 7, 1200, TICK, 1, (uint64_t[]){ 1, 20 });
	CHECK((g = find(6, 0)) && g->start == 950 && g->end == 1190);
	/* an empty stack ends everything; a thread's exit and the stop end what is open */
	read_stack(s, 7, 1300, TICK, 0, NULL);
	CHECK((g = find(1, 0)) && g->start == 100 && g->end == 1250 && !g->incomplete);
	read_stack(s, 8, 1200, TICK, 1, (uint64_t[]){ 7, 1 });
	read_stack(s, 9, 1200, TICK, 1, (uint64_t[]){ 8, 1 });
	py_spans__thread_exit(s, 1, 8, 1300);
	CHECK((g = find(7, 0)) && g->start == 1200 && g->end == 1300 && !g->incomplete);
	py_spans__close_all(s, 0, 1400);
	CHECK((g = find(8, 0)) && g->end == 1400 && g->incomplete);
	CHECK(!py_spans__on_native(s, 1, 9, 1500, 1600, false, &caller));
	py_spans__free(s);
}

/* The same function called again from the same line, its frame at the same address and
 * instruction: its caller's locals tell the calls apart (a loop's variable moved on). */
static void test_back_to_back_calls(void)
{
	struct py_spans *s = py_spans__new(&ops, NULL);
	struct py_stack_rec r = { .type = REC_PY_STACK, .reason = PY_READ_TICK, .pid = 1, .tid = 7,
				  .depth = 2 };
	const struct got_span *g;

	nspans = 0;
	r.frames[1] = (struct py_frame){ .code = 1, .instr = 10, .locals = 100 };
	r.frames[0] = (struct py_frame){ .code = 2, .instr = 5 };
	for (uint64_t ts = 100; ts <= 300; ts += 100) {
		/* main's locals stay put over two reads of one call, then its loop moves on */
		r.frames[1].locals = 100 + (ts == 300);
		r.frames[0].locals = ts; /* the innermost frame's own locals say nothing */
		r.ts = ts;
		py_spans__on_read(s, &r, offsetof(struct py_stack_rec, frames) + 2 * sizeof(r.frames[0]));
	}
	CHECK(nspans == 1);
	CHECK((g = find(2, 0)) && g->start == 100 && g->end == 250);
	/* called again, and the new call blocks at 400: it worked before it blocked, as the one
	 * before did; they part midway */
	r.frames[1].locals = 102;
	r.reason = PY_READ_BLOCK;
	r.ts = 400;
	py_spans__on_read(s, &r, offsetof(struct py_stack_rec, frames) + 2 * sizeof(r.frames[0]));
	CHECK(nspans == 2 && (g = find(2, 1)) && g->start == 250 && g->end == 350);
	py_spans__close_all(s, 0, 500);
	CHECK(nspans == 4 && (g = find(2, 2)) && g->start == 350 && g->end == 500);
	py_spans__free(s);
}

/* A wait inside the interpreter (PY_READ_WAIT: a lock, the GIL taken back): its unchanged
 * entry read and its end say nothing of when the frames change, so the switch-in still marks
 * the change; and what follows starts after the wait, beside it, never across it. */
static void test_interpreter_waits(void)
{
	struct py_spans *s = py_spans__new(&ops, NULL);
	const struct got_span *g;
	struct py_open caller;

	nspans = 0;
	/* main -> get (Queue.get) blocks at 200; woken at 300, it takes the GIL back at 310-320 */
	read_stack(s, 7, 100, TICK, 2, (uint64_t[]){ 1, 10, 2, 5 });
	read_same(s, 7, 200, BLOCK);
	py_spans__switch_in(s, 1, 7, 300);
	read_same(s, 7, 310, PY_READ_WAIT);
	CHECK(py_spans__on_native(s, 1, 7, 310, 320, true, &caller) && caller.code == 2);
	/* get returned and main called work, seen by the tick at 1300: get ends at the wait's
	 * end, not half a tick after it */
	read_stack(s, 7, 1300, TICK, 2, (uint64_t[]){ 1, 12, 3, 5 });
	CHECK((g = find(2, 0)) && g->start == 100 && g->end == 320);
	CHECK(find(3, 0) == NULL); /* work is still open */
	/* a wait right under main (time.sleep): the next frame starts after it, not before */
	read_stack(s, 7, 1400, TICK, 1, (uint64_t[]){ 1, 14 });
	read_same(s, 7, 1500, PY_READ_WAIT);
	CHECK(py_spans__on_native(s, 1, 7, 1500, 1700, true, &caller) && caller.code == 1);
	read_stack(s, 7, 1800, TICK, 2, (uint64_t[]){ 1, 16, 4, 1 });
	py_spans__close_all(s, 0, 1900);
	CHECK((g = find(4, 0)) && g->start >= 1700 && g->end == 1900);
	/* a thread first read inside a lock wait (its entry read faulted, at startup): woken,
	 * then preempted at 2960 before the wait returned at 3000. The frames held the wait from
	 * its start (2000), so they start no later, or the wait would cross them */
	read_stack(s, 8, 2960, PY_READ_PREEMPT, 2, (uint64_t[]){ 5, 10, 6, 4 });
	CHECK(py_spans__on_native(s, 1, 8, 2000, 3000, true, &caller) && caller.code == 6);
	py_spans__close_all(s, 0, 3100);
	CHECK((g = find(6, 0)) && g->start == 2000 && g->end == 3100);
	CHECK((g = find(5, 0)) && g->start == 2000);
	/* nor before what was written on the thread: 8 ends midway to the tick at 3800 (3600),
	 * 9 starts midway to the next (4000), and a wait from 3500 cannot move it before 3600 */
	read_stack(s, 9, 3000, TICK, 1, (uint64_t[]){ 7, 1 });
	read_stack(s, 9, 3400, TICK, 2, (uint64_t[]){ 7, 2, 8, 1 });
	read_stack(s, 9, 3800, TICK, 1, (uint64_t[]){ 7, 3 });
	read_stack(s, 9, 4200, TICK, 2, (uint64_t[]){ 7, 4, 9, 1 });
	CHECK((g = find(8, 0)) && g->end == 3600);
	CHECK(py_spans__on_native(s, 1, 9, 3500, 4300, true, &caller) && caller.code == 9);
	py_spans__close_all(s, 0, 4400);
	CHECK((g = find(9, 0)) && g->start == 3600);
	CHECK((g = find(7, 0)) && g->start == 3000);
	/* A wait with no Python frame open (C code between two runs of Python: at startup, 3.12
	 * waits on a lock between site's import and a path hook it runs from C), preempted inside
	 * it: the read, stamped with its start, finds the stack empty. Switched back in at 5900,
	 * it returned at 5950: the frames read next started after that, not at the switch in
	 * (test_python_gil under load: zipimporter.__init__ from the switch in, 4 us before the
	 * wait's end) */
	read_stack(s, 10, 5000, TICK, 1, (uint64_t[]){ 11, 1 });
	read_stack(s, 10, 5600, PY_READ_PREEMPT, 0, NULL);
	py_spans__switch_in(s, 1, 10, 5900);
	read_same(s, 10, 5600, PY_READ_WAIT);
	CHECK(!py_spans__on_native(s, 1, 10, 5600, 5950, true, &caller));
	read_stack(s, 10, 6000, PY_READ_PREEMPT, 2, (uint64_t[]){ 12, 1, 13, 1 });
	py_spans__close_all(s, 0, 6100);
	CHECK((g = find(11, 0)) && g->end <= 5600);
	CHECK((g = find(12, 0)) && g->start == 5950);
	CHECK((g = find(13, 0)) && g->start == 5950);
	py_spans__free(s);
}

struct got_gil {
	int tid;
	uint64_t start, end, in;
	bool incomplete;
};

static struct got_gil gils[16];
static int ngils;

static void on_gil(void *ctx, int pid, int tid, uint64_t start, uint64_t end, bool incomplete,
		   const struct py_open *in)
{
	if (ngils < 16)
		gils[ngils++] = (struct got_gil){ tid, start, end, in ? in->code : 0, incomplete };
}

static const struct py_spans_ops gil_ops = { .opened = on_opened, .span = on_span,
					     .gil = on_gil };

static void read_gil(struct py_spans *s, int tid, uint64_t ts, bool same, int n,
		     const uint64_t *cf)
{
	struct py_stack_rec r = { .type = REC_PY_STACK, .reason = BLOCK, .pid = 1, .tid = tid,
				  .ts = ts, .flags = PY_GIL | (same ? PY_SAME : 0), .depth = n };

	for (int i = 0; i < n; i++) {
		r.frames[n - 1 - i].code = cf[2 * i];
		r.frames[n - 1 - i].instr = cf[2 * i + 1];
	}
	py_spans__on_read(s, &r, offsetof(struct py_stack_rec, frames) + n * sizeof(r.frames[0]));
}

/* A read flagged PY_GIL, stamped ts for the stack and taken at now */
static void read_gil_at(struct py_spans *s, int tid, uint64_t ts, uint64_t now)
{
	struct py_stack_rec r = { .type = REC_PY_STACK, .reason = BLOCK, .pid = 1, .tid = tid,
				  .ts = ts, .now_ns = now, .flags = PY_GIL | PY_SAME };

	py_spans__on_read(s, &r, offsetof(struct py_stack_rec, frames));
}

/* Reads flagged PY_GIL: a wait from the block to the switch back in, under the innermost frame;
 * one that blocks again at once with the same stack (a timed wait that ran out) goes on; a new
 * call's wait, or one after the thread ran a while, is its own; the wait still blocked when
 * recording stops ends there, incomplete. */
static void test_gil_waits(void)
{
	struct py_spans *s = py_spans__new(&gil_ops, NULL);
	const struct got_span *g;
	struct py_open caller;

	nspans = ngils = 0;
	read_stack(s, 7, 100, TICK, 2, (uint64_t[]){ 1, 10, 2, 5 });
	read_gil(s, 7, 1000, true, 0, NULL);
	py_spans__switch_in(s, 1, 7, 6000);
	read_gil(s, 7, 6010, true, 0, NULL); /* the timed wait ran out: it waits again */
	py_spans__switch_in(s, 1, 7, 9000);
	CHECK(ngils == 0); /* written when it is known to be over */
	read_stack(s, 7, 9500, TICK, 2, (uint64_t[]){ 1, 12, 3, 5 });
	CHECK(ngils == 1 && gils[0].tid == 7 && gils[0].start == 1000 && gils[0].end == 9000 &&
	      gils[0].in == 2 && !gils[0].incomplete);
	/* the frame the wait was under ends after it */
	CHECK((g = find(2, 0)) && g->end >= 9000);
	/* a wait of a new call (the stack changed), right after: its own */
	read_gil(s, 7, 9600, false, 2, (uint64_t[]){ 1, 14, 4, 5 });
	py_spans__switch_in(s, 1, 7, 9700);
	read_gil(s, 7, 9710, false, 2, (uint64_t[]){ 1, 16, 4, 5 });
	CHECK(ngils == 2 && gils[1].start == 9600 && gils[1].end == 9700 && gils[1].in == 4);
	/* the same stack, but after the thread ran longer than PY_GIL_JOIN_NS: its own too */
	py_spans__switch_in(s, 1, 7, 9800);
	read_gil(s, 7, 9800 + PY_GIL_JOIN_NS + 1, true, 0, NULL);
	CHECK(ngils == 3 && gils[2].start == 9710 && gils[2].end == 9800);
	py_spans__close_all(s, 0, 9800 + PY_GIL_JOIN_NS + 500);
	CHECK(ngils == 4 && gils[3].start == 9800 + PY_GIL_JOIN_NS + 1 && gils[3].incomplete &&
	      gils[3].end == 9800 + PY_GIL_JOIN_NS + 500);
	/* woken (the GIL let go) before it runs: the wait ends at the waking, the rest is a wait
	 * for a CPU */
	s = (py_spans__free(s), py_spans__new(&gil_ops, NULL));
	ngils = 0;
	read_stack(s, 9, 100, TICK, 1, (uint64_t[]){ 1, 10 });
	read_gil(s, 9, 200, true, 0, NULL);
	py_spans__woken(s, 1, 9, 700);
	py_spans__switch_in(s, 1, 9, 4000);
	read_stack(s, 9, 5000, TICK, 1, (uint64_t[]){ 1, 12 });
	CHECK(ngils == 1 && gils[0].start == 200 && gils[0].end == 700 && gils[0].in == 1);
	/* woken, then runnable longer than PY_GIL_JOIN_NS (a loaded machine), blocked again at
	 * once when it ran: the same take of the GIL, one wait */
	s = (py_spans__free(s), py_spans__new(&gil_ops, NULL));
	ngils = 0;
	read_stack(s, 9, 100, TICK, 1, (uint64_t[]){ 1, 10 });
	read_gil(s, 9, 200, true, 0, NULL);
	py_spans__woken(s, 1, 9, 700);
	py_spans__switch_in(s, 1, 9, 700 + 3 * PY_GIL_JOIN_NS);
	read_gil(s, 9, 710 + 3 * PY_GIL_JOIN_NS, true, 0, NULL);
	py_spans__woken(s, 1, 9, 900 + 3 * PY_GIL_JOIN_NS);
	py_spans__switch_in(s, 1, 9, 1000 + 3 * PY_GIL_JOIN_NS);
	read_stack(s, 9, 2000 + 4 * PY_GIL_JOIN_NS, TICK, 1, (uint64_t[]){ 1, 12 });
	CHECK(ngils == 1 && gils[0].start == 200 && gils[0].end == 900 + 3 * PY_GIL_JOIN_NS);
	/* its switch back in lost (a ring full, a switch the kernel left out): the thread ran only
	 * after the waking, what ended ends there and not midway, inside the wait */
	s = (py_spans__free(s), py_spans__new(&gil_ops, NULL));
	nspans = ngils = 0;
	read_stack(s, 9, 100, TICK, 2, (uint64_t[]){ 1, 10, 2, 5 });
	read_gil(s, 9, 1000, true, 0, NULL);
	py_spans__woken(s, 1, 9, 5000);
	read_stack(s, 9, 5100, TICK, 2, (uint64_t[]){ 1, 12, 3, 5 });
	CHECK(ngils == 1 && gils[0].start == 1000 && gils[0].end == 5000);
	CHECK((g = find(2, 0)) && g->end == 5000);
	/* inside a lock wait that began at 300 (3.13's _PySemaphore_Wait takes the GIL back
	 * before it returns): the read is stamped 300, the GIL wait begins when it blocked */
	s = (py_spans__free(s), py_spans__new(&gil_ops, NULL));
	ngils = 0;
	read_stack(s, 9, 100, TICK, 1, (uint64_t[]){ 1, 10 });
	read_stack(s, 9, 300, BLOCK, 1, (uint64_t[]){ 1, 11 });
	py_spans__switch_in(s, 1, 9, 3000000);
	read_gil_at(s, 9, 300, 3000100);
	py_spans__woken(s, 1, 9, 3000400);
	py_spans__switch_in(s, 1, 9, 3000500);
	read_stack(s, 9, 3001000, TICK, 1, (uint64_t[]){ 1, 12 });
	CHECK(ngils == 1 && gils[0].start == 3000100 && gils[0].end == 3000400);
	/* a native call that returned between two waits for the GIL with the same stack (OpenCV's
	 * allocator takes it inside cv::resize, the binding again after it returns): two takes,
	 * two waits, each inside or after the call, never one across its end */
	s = (py_spans__free(s), py_spans__new(&gil_ops, NULL));
	ngils = 0;
	read_stack(s, 9, 100, TICK, 1, (uint64_t[]){ 1, 10 });
	read_gil(s, 9, 1000, true, 0, NULL);
	py_spans__switch_in(s, 1, 9, 1200);
	py_spans__on_native(s, 1, 9, 500, 1300, false, &caller);
	read_gil(s, 9, 1310, true, 0, NULL);
	py_spans__switch_in(s, 1, 9, 1500);
	read_stack(s, 9, 2000, TICK, 1, (uint64_t[]){ 1, 12 });
	CHECK(ngils == 2 && gils[0].start == 1000 && gils[0].end == 1200 &&
	      gils[1].start == 1310 && gils[1].end == 1500);
	/* a block that is not on the GIL starts none */
	s = (py_spans__free(s), py_spans__new(&gil_ops, NULL));
	ngils = 0;
	read_stack(s, 8, 100, TICK, 1, (uint64_t[]){ 1, 10 });
	read_same(s, 8, 200, BLOCK);
	py_spans__switch_in(s, 1, 8, 900);
	read_stack(s, 8, 1000, TICK, 1, (uint64_t[]){ 1, 12 });
	py_spans__close_all(s, 0, 1100);
	CHECK(ngils == 0);
	py_spans__free(s);
}

/* A thread that left the CPU and whose switch back in the kernel never reported (no
 * sched_switch, seen with ftrace too): it ran less than a tick before the next read, or a tick
 * would have read it, so that read bounds the change, not the one as it left the CPU. */
static void test_lost_switch_in(void)
{
	struct py_spans *s = py_spans__new(&ops, NULL);
	const struct got_span *g;

	nspans = 0;
	py_spans__set_tick(s, 100);
	/* main -> a, preempted at 1100; at 2500 main runs b: a ended within the tick before */
	read_stack(s, 7, 1000, TICK, 2, (uint64_t[]){ 1, 10, 2, 5 });
	read_same(s, 7, 1100, PY_READ_PREEMPT);
	read_stack(s, 7, 2500, TICK, 2, (uint64_t[]){ 1, 12, 3, 5 });
	CHECK((g = find(2, 0)) && g->start == 1000 && g->end == 2450);
	/* b blocks at 2600, and is gone when it leaves the CPU again at 4000: the same */
	read_same(s, 7, 2600, BLOCK);
	read_stack(s, 7, 4000, PY_READ_PREEMPT, 1, (uint64_t[]){ 1, 14 });
	CHECK((g = find(3, 0)) && g->start == 2450 && g->end == 3950);
	/* a tick read it in between (unchanged): the change is after that read, as always */
	read_stack(s, 7, 4100, TICK, 2, (uint64_t[]){ 1, 16, 4, 5 });
	read_same(s, 7, 4200, PY_READ_PREEMPT);
	read_same(s, 7, 5000, TICK);
	read_stack(s, 7, 5040, TICK, 1, (uint64_t[]){ 1, 18 });
	CHECK((g = find(4, 0)) && g->end == 5020);
	/* a switch in seen: the change is there, as before */
	read_stack(s, 7, 5100, TICK, 2, (uint64_t[]){ 1, 20, 5, 5 });
	read_same(s, 7, 5200, PY_READ_PREEMPT);
	py_spans__switch_in(s, 1, 7, 6000);
	read_stack(s, 7, 6500, TICK, 1, (uint64_t[]){ 1, 22 });
	CHECK((g = find(5, 0)) && g->end == 6000);
	py_spans__free(s);
}

/* A preemption right after the thread woke another (PY_WOKE: a stage put its result on a queue
 * and the consumer it woke took the CPU): what ended, ended there, as at a block; a preemption
 * with no waking says nothing of when, and the change stays midway. */
static void test_preempted_after_waking(void)
{
	struct py_stack_rec r = { .type = REC_PY_STACK, .reason = PY_READ_PREEMPT, .pid = 1,
				  .tid = 7, .depth = 2, .flags = PY_WOKE };
	struct py_spans *s = py_spans__new(&ops, NULL);
	const struct got_span *g;

	nspans = 0;
	/* main -> decode read by the tick at 1000; at 1900 main is in put, preempted as it woke */
	read_stack(s, 7, 1000, TICK, 2, (uint64_t[]){ 1, 10, 2, 5 });
	r.frames[1] = (struct py_frame){ .code = 1, .instr = 12 };
	r.frames[0] = (struct py_frame){ .code = 3, .instr = 5 };
	r.ts = 1900;
	py_spans__on_read(s, &r, offsetof(struct py_stack_rec, frames) + 2 * sizeof(r.frames[0]));
	CHECK((g = find(2, 0)) && g->start == 1000 && g->end == 1900);
	/* put returned, decode runs again, preempted at 2900 by no waking of its own: midway */
	read_stack(s, 7, 2000, TICK, 2, (uint64_t[]){ 1, 14, 2, 5 });
	read_stack(s, 7, 2900, PY_READ_PREEMPT, 2, (uint64_t[]){ 1, 16, 3, 5 });
	CHECK((g = find(2, 1)) && g->end == 2450);
	py_spans__free(s);
}

static void test_truncated_read(void)
{
	struct py_spans *s = py_spans__new(&ops, NULL);
	struct py_stack_rec r = { .type = REC_PY_STACK, .pid = 1, .tid = 3, .ts = 10, .depth = 1,
				  .flags = PY_TRUNCATED };

	nspans = 0;
	read_stack(s, 3, 5, TICK, 1, (uint64_t[]){ 1, 1 });
	py_spans__on_read(s, &r, offsetof(struct py_stack_rec, frames) + sizeof(r.frames[0]));
	py_spans__on_read(s, &r, 8); /* shorter than a header: ignored */
	CHECK(nspans == 0);
	CHECK(py_spans__partial_reads(s) == 1);
	py_spans__free(s);
}

/* A str the way CPython 3.11 lays out a compact ASCII one, in this process's memory. */
static void make_str(uint8_t *buf, const struct py_offsets *off, const char *text)
{
	int64_t n = strlen(text);
	uint32_t kind_one = off->str_kind_mask & -off->str_kind_mask;
	uint32_t state = off->str_compact_mask | off->str_ascii_mask | kind_one;

	memset(buf, 0, 128);
	memcpy(buf + off->str_length, &n, sizeof(n));
	memcpy(buf + off->str_state, &state, sizeof(state));
	memcpy(buf + off->str_ascii_data, text, n + 1);
}

/* What BPF takes of a name when it reads a frame (bpf/python.bpf.c, name_fp). */
static uint64_t fp_of(const uint8_t *str, const struct py_offsets *off)
{
	uint64_t n, head;

	memcpy(&n, str + off->str_length, sizeof(n));
	memcpy(&head, str + off->str_ascii_data, sizeof(head));
	return py_name_fp(n, head);
}

static void set_ptr(uint8_t *obj, uint32_t at, const void *p)
{
	uint64_t v = (uintptr_t)p;

	memcpy(obj + at, &v, sizeof(v));
}

/* A code object and its name freed after its frame was read, their memory taken by another
 * function's: the late lookup must say "?", never that function's name. */
static void test_code_names_never_borrowed(void)
{
	const struct py_version *v = py_version__find(3, 11);
	static uint8_t code[512], old_code[512], name[128], other[128], file[128];
	struct py_codes *c = py_codes__new();
	const struct py_offsets *off;
	const struct py_code *got;
	uint64_t fp_boot, fp_read;
	int pid = getpid();

	CHECK(v != NULL);
	if (!v)
		return;
	off = &v->off;
	make_str(file, off, "/app/stages.py");
	make_str(name, off, "_bootstrap_inner");
	fp_boot = fp_of(name, off);
	set_ptr(code, off->code_qualname, name);
	set_ptr(code, off->code_filename, file);
	/* named while alive: name and file */
	got = py_codes__get(c, pid, off, (uintptr_t)code, (uintptr_t)name, fp_boot);
	CHECK(!strcmp(got->qualname, "_bootstrap_inner") && !strcmp(got->filename, "/app/stages.py"));
	/* freed, its name's memory now another name's; a read from before is named late */
	make_str(name, off, "read_batch");
	fp_read = fp_of(name, off);
	CHECK(fp_read != fp_boot);
	got = py_codes__get(c, pid, off, (uintptr_t)old_code, (uintptr_t)name, fp_boot);
	CHECK(!strcmp(got->qualname, "?") && !strcmp(got->filename, "?"));
	/* the same code memory with the same str address but the new name: a new entry */
	got = py_codes__get(c, pid, off, (uintptr_t)code, (uintptr_t)name, fp_read);
	CHECK(!strcmp(got->qualname, "read_batch") && !strcmp(got->filename, "/app/stages.py"));
	/* a freed code object whose name still lives: the name, without a file */
	make_str(other, off, "<module>");
	got = py_codes__get(c, pid, off, (uintptr_t)old_code, (uintptr_t)other, fp_of(other, off));
	CHECK(!strcmp(got->qualname, "<module>") && !strcmp(got->filename, "?"));
	py_codes__free(c);
}

static void test_offsets(void)
{
	const struct py_version *v = py_version__find(3, 11);
	struct py_proc_cfg cfg;

	CHECK(v != NULL);
	if (!v)
		return;
	/* the values the shared notes measured by hand, now coming from the headers */
	CHECK(v->off.runtime_interp_head == 40 && v->off.tstate_native_thread_id == 160);
	CHECK(v->off.frame_code == 32 && v->off.frame_previous == 48);
	CHECK(py_version__bpf_cfg(&v->off, 0x1000, &cfg) == 0 && cfg.runtime == 0x1000);
	CHECK(py_version__find(2, 7) == NULL && py_version__find(3, 7) == NULL);
	/* every table fits the BPF side's one read per frame */
	for (int minor = 8; minor <= 13; minor++) {
		v = py_version__find(3, minor);
		CHECK(v && py_version__bpf_cfg(&v->off, 0x1000, &cfg) == 0);
		CHECK(!v || (v->off.frame_kind == 1) == (minor <= 10));
		CHECK(!v || !!v->off.dbg_size == (minor >= 13));
		/* the GIL: in _PyRuntime before 3.12, then pointed to by the interpreter; its cond
		 * and mutex before switch_cond */
		CHECK(!v || (v->off.gil_at && (!!v->off.gil_via_interp == (minor >= 12)) &&
			     v->off.gil_wait_lo && v->off.gil_wait_lo < v->off.gil_wait_hi));
		CHECK(!v || (cfg.gil_at == v->off.gil_at && cfg.gil_hi == v->off.gil_wait_hi &&
			     !!(cfg.flags & PY_CFG_GIL_INTERP) == (minor >= 12)));
		/* from 3.11 the first locals follow the frame's fields: read with them */
		CHECK(!v || (cfg.frame_locals_at != 0) == (minor >= 11));
		CHECK(!v || !cfg.frame_locals_at ||
		      cfg.frame_base + cfg.frame_locals_at == v->off.frame_localsplus);
		/* a thread state's id and current frame: one read */
		CHECK(!v || (cfg.tstate_span && cfg.tstate_span <= PY_READ_MAX &&
			     cfg.tstate_lo == v->off.tstate_frame));
	}
	/* 3.14 on have no table: the newest (3.13) for the rest, their own debug layout (3.15:
	 * the newest known, 3.14's) */
	CHECK(py_version__find(3, 14) == NULL && py_version__newest()->minor == 13);
	CHECK(py_version__layout(3, 13) == NULL && py_version__layout(3, 14) &&
	      py_version__layout(3, 14)->minor == 14 && py_version__layout(3, 15) &&
	      py_version__layout(3, 15)->minor == 14);
	v = py_version__layout(3, 14);
	CHECK(v && v->off.dbg_size > py_version__find(3, 13)->off.dbg_size && !v->off.frame_code);
}

/* _Py_DebugOffsets as 3.13 lays it out, filled from the 3.13 table, read from our own memory. */
static void put64(uint8_t *buf, uint32_t off, uint64_t v)
{
	memcpy(buf + off, &v, sizeof(v));
}

static void test_debug_offsets(void)
{
	const struct py_version *v = py_version__find(3, 13);
	const struct py_offsets *t;
	static uint8_t buf[4096];
	struct py_offsets out, t2;
	char why[96];
	int changed;

	CHECK(v && v->off.dbg_size && v->off.dbg_size <= sizeof(buf));
	if (!v)
		return;
	t = &v->off;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "xdebugpy", 8);
	put64(buf, t->dbg_version, 0x030d00f0); /* 3.13.0 final */
	/* each section's size: larger than any offset in it */
	put64(buf, t->dbg_runtime_size, 1 << 16);
	put64(buf, t->dbg_interp_size, 1 << 16);
	put64(buf, t->dbg_tstate_size, 1 << 16);
	put64(buf, t->dbg_frame_size, 1 << 16);
	put64(buf, t->dbg_code_size, 1 << 16);
	put64(buf, t->dbg_str_size, 1 << 16);
	put64(buf, t->dbg_bytes_size, 1 << 16);
	put64(buf, t->dbg_object_size, 1 << 16);
	put64(buf, t->dbg_type_size, 1 << 16);
	put64(buf, t->dbg_dict_size, 1 << 16);
	put64(buf, t->dbg_pylong_size, 1 << 16);
	put64(buf, t->dbg_runtime_interp_head, t->runtime_interp_head);
	put64(buf, t->dbg_interp_next, t->interp_next);
	put64(buf, t->dbg_interp_threads_head, t->interp_threads_head);
	put64(buf, t->dbg_interp_modules, t->interp_modules);
	put64(buf, t->dbg_tstate_next, t->tstate_next);
	put64(buf, t->dbg_tstate_frame, t->tstate_frame);
	put64(buf, t->dbg_tstate_thread_id, t->tstate_thread_id);
	put64(buf, t->dbg_tstate_native_thread_id, t->tstate_native_thread_id);
	put64(buf, t->dbg_frame_previous, t->frame_previous);
	put64(buf, t->dbg_frame_code, t->frame_code);
	put64(buf, t->dbg_frame_prev_instr, t->frame_prev_instr);
	put64(buf, t->dbg_frame_owner, t->frame_owner);
	put64(buf, t->dbg_frame_localsplus, t->frame_localsplus);
	put64(buf, t->dbg_code_filename, t->code_filename);
	put64(buf, t->dbg_code_name, t->code_name);
	put64(buf, t->dbg_code_qualname, t->code_qualname);
	put64(buf, t->dbg_code_linetable, t->code_linetable);
	put64(buf, t->dbg_code_firstlineno, t->code_firstlineno);
	put64(buf, t->dbg_code_adaptive, t->code_adaptive);
	put64(buf, t->dbg_str_state, t->str_state);
	put64(buf, t->dbg_str_length, t->str_length);
	put64(buf, t->dbg_str_ascii_data, t->str_ascii_data);
	put64(buf, t->dbg_var_size, t->var_size);
	put64(buf, t->dbg_bytes_data, t->bytes_data);
	put64(buf, t->dbg_object_type, t->object_type);
	put64(buf, t->dbg_type_name, t->type_name);
	put64(buf, t->dbg_type_flags, t->type_flags);
	put64(buf, t->dbg_dict_keys, t->dict_keys);
	put64(buf, t->dbg_dict_values, t->dict_values);
	put64(buf, t->dbg_long_size, t->long_size);
	put64(buf, t->dbg_long_digits, t->long_digits);
	CHECK(py_debug_offsets__read(getpid(), (uintptr_t)buf, 3, 13, t, &out, &changed, why,
				     sizeof(why)) == 0 && changed == 0);
	CHECK(!memcmp(&out, t, sizeof(out)));
	/* 3.13's keep no GIL (the table's stands); 3.14's keep the interpreter's ceval.gil (here
	 * in a slot this test leaves free, runtime_state.finalizing's) */
	CHECK(!t->dbg_gil_at && py_version__layout(3, 14) &&
	      py_version__layout(3, 14)->off.dbg_gil_at);
	t2 = *t;
	t2.dbg_gil_at = 32;
	put64(buf, 32, t->gil_at + 104);
	CHECK(py_debug_offsets__read(getpid(), (uintptr_t)buf, 3, 13, &t2, &out, &changed, why,
				     sizeof(why)) == 0 && changed == 1);
	CHECK(out.gil_at == t->gil_at + 104);
	/* a build whose thread state differs: its own offset wins, the rest stays */
	put64(buf, t->dbg_tstate_native_thread_id, t->tstate_native_thread_id + 8);
	CHECK(py_debug_offsets__read(getpid(), (uintptr_t)buf, 3, 13, t, &out, &changed, why,
				     sizeof(why)) == 0 && changed == 1);
	CHECK(out.tstate_native_thread_id == t->tstate_native_thread_id + 8 &&
	      out.frame_code == t->frame_code && out.str_kind_mask == t->str_kind_mask);
	/* another version's, a free-threaded build's, an offset past its struct, no cookie */
	CHECK(py_debug_offsets__read(getpid(), (uintptr_t)buf, 3, 14, t, &out, &changed, why,
				     sizeof(why)) == -EINVAL);
	put64(buf, t->dbg_free_threaded, 1);
	CHECK(py_debug_offsets__read(getpid(), (uintptr_t)buf, 3, 13, t, &out, &changed, why,
				     sizeof(why)) == -ENOEXEC && strstr(why, "free-threaded"));
	put64(buf, t->dbg_free_threaded, 0);
	put64(buf, t->dbg_frame_owner, 1 << 16);
	CHECK(py_debug_offsets__read(getpid(), (uintptr_t)buf, 3, 13, t, &out, &changed, why,
				     sizeof(why)) == -EINVAL && !memcmp(&out, t, sizeof(out)));
	buf[0] = 'X';
	CHECK(py_debug_offsets__read(getpid(), (uintptr_t)buf, 3, 13, t, &out, &changed, why,
				     sizeof(why)) == -ENOENT && strstr(why, "cookie"));
}

static void test_usdt_args(void)
{
	struct usdt_arg a[USDT_MAX_ARGS];

	CHECK(usdt_arg__parse("-4@%edi", &a[0]) == 0 && a[0].kind == USDT_ARG_REG &&
	      a[0].size == 4 && a[0].is_signed && a[0].reg_off == offsetof(struct pt_regs, rdi));
	CHECK(usdt_arg__parse("8@-16(%rbp)", &a[0]) == 0 && a[0].kind == USDT_ARG_MEM &&
	      a[0].val == -16 && a[0].reg_off == offsetof(struct pt_regs, rbp) && !a[0].is_signed);
	CHECK(usdt_arg__parse("-4@112(%rsp)", &a[0]) == 0 && a[0].val == 112);
	CHECK(usdt_arg__parse("4@$5", &a[0]) == 0 && a[0].kind == USDT_ARG_CONST && a[0].val == 5);
	CHECK(usdt_arg__parse("1@%r8b", &a[0]) == 0 &&
	      a[0].reg_off == offsetof(struct pt_regs, r8));
	CHECK(usdt_arg__parse("8@(%rax)", &a[0]) == 0 && a[0].val == 0);
	CHECK(usdt_arg__parse("3@%eax", &a[0]) < 0);
	CHECK(usdt_arg__parse("4@%xmm0", &a[0]) < 0);
	CHECK(usdt_arg__parse("8@8(%rax,%rbx,2)", &a[0]) < 0);
	CHECK(usdt_arg__parse("%eax", &a[0]) < 0);
	CHECK(usdt_args__parse("8@%r14 8@%rax -4@%ebp", a, USDT_MAX_ARGS) == 3 &&
	      a[2].reg_off == offsetof(struct pt_regs, rbp));
	CHECK(usdt_args__parse("", a, USDT_MAX_ARGS) == 0);
}

static void test_usdt_python(void)
{
	const char *path = "/usr/bin/python3.11";
	struct usdt_probes p;
	bool start = false, done = false;
	int fd;

	if (access(path, R_OK)) {
		printf("# skip: no %s\n", path);
		return;
	}
	CHECK(usdt__read(path, &p) == 0);
	fd = open(path, O_RDONLY);
	for (size_t i = 0; i < p.cnt; i++) {
		unsigned char b = 0;

		CHECK(!strcmp(p.v[i].provider, "python"));
		CHECK(pread(fd, &b, 1, p.v[i].offset) == 1 && b == 0x90); /* the site is a nop */
		CHECK(p.v[i].sema_offset != 0);
		if (!strcmp(p.v[i].name, "gc__start")) {
			start = true;
			CHECK(p.v[i].nargs == 1 && p.v[i].args_ok && p.v[i].args[0].size == 4);
		}
		done |= !strcmp(p.v[i].name, "gc__done");
	}
	close(fd);
	CHECK(start && done);
	usdt_probes__free(&p);
	CHECK(usdt__read("/etc/hostname", &p) == -ENOEXEC);
}

int main(void)
{
	RUN(test_linetable);
	RUN(test_spans);
	RUN(test_back_to_back_calls);
	RUN(test_interpreter_waits);
	RUN(test_gil_waits);
	RUN(test_lost_switch_in);
	RUN(test_preempted_after_waking);
	RUN(test_truncated_read);
	RUN(test_offsets);
	RUN(test_lnotab);
	RUN(test_debug_offsets);
	RUN(test_code_names_never_borrowed);
	RUN(test_usdt_args);
	RUN(test_usdt_python);
	UNIT_EXIT();
}
