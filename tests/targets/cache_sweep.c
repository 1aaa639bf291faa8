// SPDX-License-Identifier: MIT
/* A target that works through a buffer the size of the L2 cache before each call of a probed
 * function, as a program doing real work between hits does: each hit then finds the probe's
 * trap path out of the caches. It calls swept_call (probed) and plain_call (the same code, not
 * probed) in alternate blocks and times each block in its own CPU time, so that what a probe
 * costs a call, the misses it causes included, is the difference of the two, and drift in the
 * machine's load falls on both.
 *
 * Usage: cache_sweep CALLS [PASSES [BYTES]]   (CALLS of each function; PASSES over the buffer
 * a call, 2 by default: a call then lasts well beyond one sweep; BYTES: the L2's size)
 * Prints "calls N swept_ns X plain_ns Y": the CPU time a call with its sweep took, the median
 * of the blocks. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 250

/* push first: the kernel emulates it, the common case */
__asm__(".text\n"
	".p2align 4\n.globl swept_call\n.type swept_call,@function\nswept_call:\n"
	"push %rbp\nmov %rsp,%rbp\nlea 1(%rdi),%eax\npop %rbp\nret\n"
	".size swept_call,.-swept_call\n"
	".p2align 4\n.globl plain_call\n.type plain_call,@function\nplain_call:\n"
	"push %rbp\nmov %rsp,%rbp\nlea 1(%rdi),%eax\npop %rbp\nret\n"
	".size plain_call,.-plain_call\n");
int swept_call(int x);
int plain_call(int x);

static double cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 0, l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	long passes = argc > 2 ? atol(argv[2]) : 2, nblocks = calls / BLOCK;
	size_t bytes = argc > 3 ? (size_t)atol(argv[3]) : l2 > 0 ? (size_t)l2 : 1 << 20;
	int (*volatile fn[2])(int) = { swept_call, plain_call }; /* never inlined */
	double *per[2];
	volatile unsigned char *buf;
	int x = 0;

	if (nblocks <= 0 || passes <= 0 || !bytes) {
		fprintf(stderr, "usage: cache_sweep CALLS [PASSES [BYTES]]  (CALLS >= %d)\n", BLOCK);
		return 2;
	}
	buf = calloc(1, bytes);
	per[0] = calloc(nblocks, sizeof(double));
	per[1] = calloc(nblocks, sizeof(double));
	if (!buf || !per[0] || !per[1])
		return 1;
	for (long b = 0; b < nblocks; b++)
		for (int k = 0; k < 2; k++) {
			double t = cpu_ns();

			for (long i = 0; i < BLOCK; i++) {
				for (long p = 0; p < passes; p++)
					for (size_t j = 0; j < bytes; j += 64)
						buf[j]++;
				x = fn[(b + k) & 1](x); /* which goes first alternates too */
			}
			per[(b + k) & 1][b] = (cpu_ns() - t) / BLOCK;
		}
	qsort(per[0], nblocks, sizeof(double), cmp);
	qsort(per[1], nblocks, sizeof(double), cmp);
	printf("calls %d swept_ns %.1f plain_ns %.1f\n", x / 2, per[0][nblocks / 2],
	       per[1][nblocks / 2]);
	return 0;
}
