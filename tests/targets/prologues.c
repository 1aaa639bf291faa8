// SPDX-License-Identifier: MIT
/* Functions whose first instructions the kernel single-steps, for moved probe sites
 * (userspace/elf/site.h). Hand-written, so that each prologue is exactly the one named:
 *   endbr_push   endbr64; push %rbp                 moves to +4
 *   test_jcc     test %edi,%edi; je (early return)  moves to +2, the jcc: both paths pass it
 *   loop_head    endbr64; a loop back to +4         stays: the loop would hit a moved site
 *   sub_rsp      endbr64; sub $8,%rsp               stays: rsp changes first
 *   set_arg      endbr64; mov $7,%edi; push %rbx    moves, unless arg0 is read at the site
 * and cet_work, a C function built with -fcf-protection=full (endbr64 first).
 * Calls each N times with arguments 0, 1, 2, 0, ..., then prints how many calls each got:
 *   prologues N
 *   calls endbr_push N ...
 * Or, for the overhead budget, a paced loop for SECONDS: each round calls cet_work once, then
 * sub_rsp (single-stepped: ~10 us a call when probed) 300 times, then sleeps 1 ms; prints
 * "rounds R" at the end:
 *   prologues --pace SECONDS
 * Or one long call: run_loop calls sub_rsp flat out for SECONDS and prints how many calls it
 * made in each second ("second K CALLS"), so that the pace shows while it is traced and after:
 *   prologues --loop SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FUNC(name, body)                                                                   \
	".p2align 4\n.globl " name "\n.type " name ",@function\n" name ":\n" body             \
	".size " name ",.-" name "\n"

__asm__(".text\n"
	FUNC("endbr_push", "endbr64\npush %rbp\nmov %rsp,%rbp\nlea 1(%rdi),%eax\npop %rbp\nret\n")
	FUNC("test_jcc", "test %edi,%edi\nje 1f\npush %rbx\nlea 2(%rdi),%eax\npop %rbx\nret\n"
			 "1:\nxor %eax,%eax\nret\n")
	FUNC("loop_head", "endbr64\nmov %edi,%eax\n2:\npush %rbx\npop %rbx\ndec %eax\njg 2b\n"
			  "lea 3(%rdi),%eax\nret\n")
	FUNC("sub_rsp", "endbr64\nsub $8,%rsp\nlea 4(%rdi),%eax\nadd $8,%rsp\nret\n")
	FUNC("set_arg", "endbr64\nmov $7,%edi\npush %rbx\nlea 5(%rdi),%eax\npop %rbx\nret\n"));

int endbr_push(int x);
int test_jcc(int x);
int loop_head(int x);
int sub_rsp(int x);
int set_arg(int x);

__attribute__((noinline)) int cet_work(int x)
{
	volatile int y = x;

	if (x == 0)
		return 0; /* an early return */
	for (int i = 0; i < 10; i++)
		y += i;
	return y;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int pace(double seconds)
{
	struct timespec ms = { 0, 1000 * 1000 };
	double end = now_s() + seconds;
	long rounds = 0, sum = 0;

	printf("ready\n");
	fflush(stdout);
	while (now_s() < end) {
		sum += cet_work(1);
		for (int i = 0; i < 300; i++)
			sum += sub_rsp(i);
		nanosleep(&ms, NULL);
		rounds++;
	}
	printf("rounds %ld sum %ld\n", rounds, sum);
	return 0;
}

/* Probed: open for the whole run, while the probes inside it fire. Aligned away from cet_work:
 * none of its bytes, read as a short jump, may reach cet_work's skipped bytes (elf/site.c). */
__attribute__((noinline, aligned(256))) long run_loop(double seconds)
{
	double start = now_s(), next = start + 1;
	long calls = 0, sum = 0;
	int second = 0;

	while (second < seconds) {
		sum += sub_rsp((int)calls);
		if (++calls % 1024 == 0 && now_s() >= next) {
			printf("second %d %ld\n", second++, calls);
			fflush(stdout);
			calls = 0;
			next += 1;
		}
	}
	return sum;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int);
	} fns[] = { { "endbr_push", endbr_push }, { "test_jcc", test_jcc },
		    { "loop_head", loop_head },	  { "sub_rsp", sub_rsp },
		    { "set_arg", set_arg },	  { "cet_work", cet_work } };
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	long sum = 0;

	if (argc > 2 && !strcmp(argv[1], "--pace"))
		return pace(atof(argv[2]));
	if (argc > 2 && !strcmp(argv[1], "--loop"))
		return run_loop(atof(argv[2])) == 42;
	for (int i = 0; i < n; i++)
		for (size_t f = 0; f < sizeof(fns) / sizeof(fns[0]); f++)
			sum += fns[f].fn(i % 3);
	for (size_t f = 0; f < sizeof(fns) / sizeof(fns[0]); f++)
		printf("calls %s %d\n", fns[f].name, n);
	printf("sum %ld\n", sum);
	return 0;
}
