// SPDX-License-Identifier: MIT
/* Unit tests of the Python frames' userspace: the 3.11 location table (a table and the lines
 * CPython itself gives for it), spans from stack reads and their nesting with native spans, the
 * offsets table, and the USDT notes and operands (checked against python3.11's own notes: every
 * USDT site is a nop). */
#include "elf/usdt.h"
#include "python/py_code.h"
#include "python/py_offsets.h"
#include "python/py_spans.h"
#include "unit.h"

#include <asm/ptrace.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
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
static const int lines[] = { 1,	 2,  2,	 2,  2,	 2,  3,	 3,  3,	 3,  3,	 3,  4,	 4,
			     5,	 5,  5,	 5,  5,	 5,  5,	 5,  5,	 5,  5,	 5,  5,	 5,
			     4,	 4,  4,	 4,  4,	 4,  4,	 4,  4,	 4,  7,	 7,  10, 10,
			     10, 10, 10, 10, 10, 11, 10, 10, 10, 10, 10, 10, 10, 10 };

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

struct got_span {
	int tid;
	uint64_t code, start, end;
	bool incomplete;
};

static struct got_span spans[64];
static int nspans;

static void on_span(void *ctx, int pid, int tid, uint64_t code, uint64_t start, uint64_t end,
		    bool incomplete)
{
	if (nspans < 64)
		spans[nspans++] = (struct got_span){ tid, code, start, end, incomplete };
}

static const struct py_spans_ops ops = { .span = on_span };

/* A read at ts of frames given outermost first as (code, instr) pairs. */
static void read_stack(struct py_spans *s, int tid, uint64_t ts, int n, const uint64_t *cf)
{
	struct py_stack_rec r = { .type = REC_PY_STACK, .pid = 1, .tid = tid, .ts = ts, .depth = n };

	for (int i = 0; i < n; i++) {
		r.frames[n - 1 - i].code = cf[2 * i];
		r.frames[n - 1 - i].instr = cf[2 * i + 1];
	}
	py_spans__on_read(s, &r, offsetof(struct py_stack_rec, frames) + n * sizeof(r.frames[0]));
}

static const struct got_span *find(uint64_t code, int nth)
{
	for (int i = 0; i < nspans; i++)
		if (spans[i].code == code && !nth--)
			return &spans[i];
	return NULL;
}

static void test_spans(void)
{
	struct py_spans *s = py_spans__new(&ops, NULL);
	const struct got_span *g;
	struct py_open caller;

	nspans = 0;
	/* main -> a, then main -> b at another call site, then main -> b again from a new site */
	read_stack(s, 7, 100, 2, (uint64_t[]){ 1, 10, 2, 500 });
	read_stack(s, 7, 200, 2, (uint64_t[]){ 1, 10, 2, 520 }); /* a goes on */
	read_stack(s, 7, 300, 2, (uint64_t[]){ 1, 12, 3, 600 }); /* a ended, b started */
	read_stack(s, 7, 400, 2, (uint64_t[]){ 1, 14, 3, 600 }); /* b again, called from 14 */
	CHECK(nspans == 2);
	CHECK((g = find(2, 0)) && g->start == 100 && g->end == 300 && g->tid == 7);
	CHECK((g = find(3, 0)) && g->start == 300 && g->end == 400);
	/* recursion: the same code at two depths */
	read_stack(s, 7, 500, 3, (uint64_t[]){ 1, 14, 3, 610, 3, 700 });
	CHECK(nspans == 2);
	read_stack(s, 7, 600, 2, (uint64_t[]){ 1, 14, 3, 620 });
	CHECK(nspans == 3 && spans[2].code == 3 && spans[2].start == 500 && spans[2].end == 600);

	/* a native span [650, 900] entered from b (its entry read at 650 is unchanged, so none
	 * came); a callback c seen at 700 inside it ends no later than the native span */
	read_stack(s, 7, 700, 3, (uint64_t[]){ 1, 14, 3, 640, 4, 50 });
	CHECK(py_spans__on_native(s, 1, 7, 650, 900, &caller));
	CHECK(caller.code == 3 && caller.instr == 640);
	CHECK((g = find(4, 0)) && g->start == 700 && g->end == 900);
	/* b outlives the native call: it ends at the next read without it */
	read_stack(s, 7, 1000, 1, (uint64_t[]){ 1, 16 });
	CHECK((g = find(3, 2)) && g->start == 400 && g->end == 1000);
	/* an empty stack ends everything; a thread's exit and the stop end what is open */
	read_stack(s, 7, 1100, 0, NULL);
	CHECK((g = find(1, 0)) && g->start == 100 && g->end == 1100 && !g->incomplete);
	read_stack(s, 8, 1200, 1, (uint64_t[]){ 5, 1 });
	read_stack(s, 9, 1200, 1, (uint64_t[]){ 6, 1 });
	py_spans__thread_exit(s, 1, 8, 1300);
	CHECK((g = find(5, 0)) && g->end == 1300 && !g->incomplete);
	py_spans__close_all(s, 0, 1400);
	CHECK((g = find(6, 0)) && g->end == 1400 && g->incomplete);
	CHECK(!py_spans__on_native(s, 1, 9, 1500, 1600, &caller));
	py_spans__free(s);
}

static void test_truncated_read(void)
{
	struct py_spans *s = py_spans__new(&ops, NULL);
	struct py_stack_rec r = { .type = REC_PY_STACK, .pid = 1, .tid = 3, .ts = 10, .depth = 1,
				  .flags = PY_TRUNCATED };

	nspans = 0;
	read_stack(s, 3, 5, 1, (uint64_t[]){ 1, 1 });
	py_spans__on_read(s, &r, offsetof(struct py_stack_rec, frames) + sizeof(r.frames[0]));
	py_spans__on_read(s, &r, 8); /* shorter than a header: ignored */
	CHECK(nspans == 0);
	CHECK(py_spans__partial_reads(s) == 1);
	py_spans__free(s);
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
	CHECK(py_version__bpf_cfg(v, 0x1000, &cfg) == 0 && cfg.runtime == 0x1000);
	CHECK(py_version__find(2, 7) == NULL);
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
	CHECK(usdt_arg__parse("1@%r8b", &a[0]) == 0 && a[0].reg_off == offsetof(struct pt_regs, r8));
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
	RUN(test_truncated_read);
	RUN(test_offsets);
	RUN(test_usdt_args);
	RUN(test_usdt_python);
	UNIT_EXIT();
}
