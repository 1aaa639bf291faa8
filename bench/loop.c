// SPDX-License-Identifier: MIT
/* The loop target of the benchmarks: threads that call one tiny probed function over and over,
 * flat out or at a set rate, and report how long each call took. The probed functions are
 * written in assembly so that their first instruction is the one the benchmark asks for:
 *   bench_push   push %rbp          emulated by the kernel in the trap
 *   bench_step   sub $8,%rsp        copied out of line and single-stepped (a second trap)
 *   bench_nop    nop                emulated
 *   bench_nopl   nopl (%rax)        a 3-byte nop
 *   bench_nop5   nopl 0(%rax,%rax)  a 5-byte nop: kernels >= 6.18 rewrite the site into a call
 *   bench_endbr  endbr64            what -fcf-protection puts first: single-stepped
 *   bench_endbr_push  endbr64; push %rbp       tracer moves its probes to the push (+4)
 *   bench_test_jcc    test $1,%dil; je (an early return for even x, every other call)
 *                                              tracer moves its probes to the jcc (+4)
 *
 * Usage: loop [-f FUNC] [-t THREADS] [-n CALLS | -s SECONDS] [-r RATE] [-w]
 *   -n CALLS    calls per thread (default 1000000)
 *   -s SECONDS  call for this long instead
 *   -r RATE     calls per second in all, spread over the threads (default: flat out)
 *   -w          print "ready PID ADDR" and wait for SIGUSR1 before calling (ADDR: the function's
 *               address, where a probe shows as a changed first byte)
 * Prints one line per thread and a total:
 *   thread I calls N ns WALL cpu_ns CPU
 *   total calls N ns_per_call X wall_ns_per_call Y
 * WALL is the thread's wall time, CPU its CPU time (CLOCK_THREAD_CPUTIME_ID), which includes the
 * kernel's time in the probe traps and BPF programs that run on the thread, and excludes the time
 * it waits for a CPU: on a shared machine the cost of a probe shows there, not in wall time.
 * ns_per_call is the mean over threads of CPU / calls, wall_ns_per_call of WALL / calls. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FUNC(name, body)                                                                   \
	".p2align 4\n.globl " name "\n.type " name ",@function\n" name ":\n" body             \
	".size " name ",.-" name "\n"

__asm__(".text\n"
	FUNC("bench_push", "push %rbp\nmov %rsp,%rbp\nlea 1(%rdi),%eax\npop %rbp\nret\n")
	FUNC("bench_step", "sub $8,%rsp\nlea 1(%rdi),%eax\nadd $8,%rsp\nret\n")
	FUNC("bench_nop", "nop\nlea 1(%rdi),%eax\nret\n")
	FUNC("bench_nopl", ".byte 0x0f,0x1f,0x00\nlea 1(%rdi),%eax\nret\n")
	FUNC("bench_nop5", ".byte 0x0f,0x1f,0x44,0x00,0x00\nlea 1(%rdi),%eax\nret\n")
	FUNC("bench_endbr", ".byte 0xf3,0x0f,0x1e,0xfa\nlea 1(%rdi),%eax\nret\n")
	FUNC("bench_endbr_push", "endbr64\npush %rbp\nmov %rsp,%rbp\nlea 1(%rdi),%eax\npop %rbp\n"
				 "ret\n")
	FUNC("bench_test_jcc", "test $1,%dil\nje 1f\npush %rbp\nmov %rsp,%rbp\n"
			       "lea 1(%rdi),%eax\npop %rbp\nret\n1:\nlea 1(%rdi),%eax\nret\n"));

int bench_push(int x);
int bench_step(int x);
int bench_nop(int x);
int bench_nopl(int x);
int bench_nop5(int x);
int bench_endbr(int x);
int bench_endbr_push(int x);
int bench_test_jcc(int x);

typedef int (*func_t)(int);

static const struct {
	const char *name;
	func_t fn;
} funcs[] = {
	{ "bench_push", bench_push }, { "bench_step", bench_step }, { "bench_nop", bench_nop },
	{ "bench_nopl", bench_nopl }, { "bench_nop5", bench_nop5 }, { "bench_endbr", bench_endbr },
	{ "bench_endbr_push", bench_endbr_push }, { "bench_test_jcc", bench_test_jcc },
};

static func_t volatile fn;
static long calls = 1000000;
static double seconds, rate;
static int nthreads = 1;
static pthread_barrier_t barrier;

struct worker {
	pthread_t th;
	long calls;
	uint64_t ns, cpu_ns;
};

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* Flat out: a fixed number of calls, or as many as fit in the time (checked every 1024). */
static long run_flat(uint64_t start)
{
	uint64_t end = start + (uint64_t)(seconds * 1e9);
	func_t f = fn;
	long n = 0;
	int x = 0;

	if (!seconds) {
		for (n = 0; n < calls; n++)
			x = f(x);
	} else {
		do {
			for (int i = 0; i < 1024; i++)
				x = f(x);
			n += 1024;
		} while (now_ns() < end);
	}
	__asm__ volatile("" : : "r"(x));
	return n;
}

/* At a rate: every millisecond the calls due so far, then sleep to the next tick. */
static long run_rate(uint64_t start)
{
	double per_ns = rate / nthreads / 1e9;
	uint64_t end = seconds ? start + (uint64_t)(seconds * 1e9) : UINT64_MAX;
	long limit = seconds ? -1 : calls, n = 0;
	struct timespec ts;
	func_t f = fn;
	int x = 0;

	for (uint64_t tick = start;; tick += 1000000) {
		uint64_t t = now_ns();
		long due = (long)((t - start) * per_ns);

		if (t >= end)
			break;
		if (limit >= 0 && due > limit)
			due = limit;
		for (; n < due; n++)
			x = f(x);
		if (limit >= 0 && n >= limit)
			break;
		ts.tv_sec = (tick + 1000000) / 1000000000ULL;
		ts.tv_nsec = (tick + 1000000) % 1000000000ULL;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	__asm__ volatile("" : : "r"(x));
	return n;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t start, cpu;

	pthread_barrier_wait(&barrier);
	start = now_ns();
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	w->calls = rate > 0 ? run_rate(start) : run_flat(start);
	w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	w->ns = now_ns() - start;
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: loop [-f FUNC] [-t THREADS] [-n CALLS | -s SECONDS] [-r RATE] "
			"[-w]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *name = "bench_push";
	struct worker *w;
	double mean = 0, wall = 0;
	long total = 0;
	bool wait = false;
	sigset_t set;
	int opt, sig;

	while ((opt = getopt(argc, argv, "f:t:n:s:r:w")) != -1) {
		switch (opt) {
		case 'f':
			name = optarg;
			break;
		case 't':
			nthreads = atoi(optarg);
			break;
		case 'n':
			calls = atol(optarg);
			break;
		case 's':
			seconds = atof(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'w':
			wait = true;
			break;
		default:
			return usage();
		}
	}
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		if (!strcmp(funcs[i].name, name))
			fn = funcs[i].fn;
	if (!fn || nthreads < 1 || calls < 0 || seconds < 0 || rate < 0)
		return usage();
	if (wait) {
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("ready %d %#lx\n", getpid(), (unsigned long)fn);
		fflush(stdout);
		sigwait(&set, &sig);
	}
	w = calloc(nthreads, sizeof(*w));
	pthread_barrier_init(&barrier, NULL, nthreads);
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i])) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		printf("thread %d calls %ld ns %llu cpu_ns %llu\n", i, w[i].calls,
		       (unsigned long long)w[i].ns, (unsigned long long)w[i].cpu_ns);
		total += w[i].calls;
		mean += w[i].calls ? (double)w[i].cpu_ns / w[i].calls / nthreads : 0;
		wall += w[i].calls ? (double)w[i].ns / w[i].calls / nthreads : 0;
	}
	printf("total calls %ld ns_per_call %.2f wall_ns_per_call %.2f\n", total, mean, wall);
	free(w);
	return 0;
}
