// SPDX-License-Identifier: MIT
/* The pipeline's call log: what each thread records of its probed functions, and the file it
 * becomes at exit (its format: --help, tests/targets/README.md). */
#include "pipeline.h"

#include <stdlib.h>
#include <unistd.h>

const char *const fn_names[] = {
	[FN_READ_PACKET] = "read_packet",   [FN_DECODE_FRAME] = "decode_frame",
	[FN_RUN_OPERATOR] = "run_operator", [FN_OP_RESIZE] = "op_resize",
	[FN_OP_NORMALIZE] = "op_normalize", [FN_OP_INFER] = "op_infer",
	[FN_QUEUE_PUSH] = "queue_push",	    [FN_QUEUE_POP] = "queue_pop",
	[FN_WRITE_FRAME] = "write_frame",
};

const char *const op_names[N_OPS] = {"resize", "normalize", "infer"};

_Thread_local struct tlog *tl_log;

__attribute__((noinline)) bool tlog_grow(struct tlog *l)
{
	if (l->cap >= l->max)
		return false;
	size_t ncap = l->cap ? l->cap * 2 : 1024;
	if (ncap > l->max)
		ncap = l->max;
	struct rec *n = realloc(l->recs, ncap * sizeof(*n));
	if (!n)
		return false;
	l->recs = n;
	l->cap = ncap;
	return true;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns) /* the enclosing call first */
		return x->end_ns > y->end_ns ? -1 : 1;
	return (int)x->fn - (int)y->fn;
}

int write_log(FILE *out, struct tlog *const *logs, int nw, uint64_t written)
{
	uint64_t dropped = 0;

	fprintf(out, "# pid %d\n", (int)getpid());
	fprintf(out,
		"# config frames=%ld forever=%d decoders=%d operators=%d queue_cap=%d "
		"bottleneck=%s read_us=%ld decode_us=%ld op_us=%ld write_us=%ld\n",
		cfg.frames, (int)cfg.forever, cfg.decoders, cfg.operators, cfg.queue_cap,
		cfg.bottleneck, cfg.read_us, cfg.decode_us, cfg.op_us, cfg.write_us);
	for (int i = 0; i < nw; i++) {
		fprintf(out, "# thread %d %s\n", (int)logs[i]->tid, logs[i]->name);
		dropped += logs[i]->dropped;
	}
	fprintf(out, "# written %llu\n", (unsigned long long)written);
	fprintf(out, "# dropped %llu\n", (unsigned long long)dropped);
	for (int i = 0; i < nw; i++) {
		struct tlog *l = logs[i];

		if (l->len)
			qsort(l->recs, l->len, sizeof(*l->recs), rec_cmp);
		for (size_t j = 0; j < l->len; j++) {
			const struct rec *r = &l->recs[j];

			if (r->fn == FN_RUN_OPERATOR)
				fprintf(out, "%d %s %llu %llu %s\n", (int)l->tid, fn_names[r->fn],
					(unsigned long long)r->start_ns, (unsigned long long)r->end_ns,
					r->op >= 0 ? op_names[r->op] : "?");
			else
				fprintf(out, "%d %s %llu %llu\n", (int)l->tid, fn_names[r->fn],
					(unsigned long long)r->start_ns, (unsigned long long)r->end_ns);
		}
	}
	if (fflush(out) != 0 || ferror(out))
		return -1;
	return 0;
}

