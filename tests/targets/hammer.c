// SPDX-License-Identifier: MIT
/*
 * hammer: a load generator. T threads call two probed functions flat out for S seconds:
 * hammer_outer() calls hammer_inner() once, so the spans nest. Every N-th inner call spins for
 * U microseconds, so that a tracer run with --min-dur keeps those few and counts the rest. The
 * ground-truth log gives every thread's exact call counts.
 *
 *   hammer [--threads T] [--seconds S] [--slow-every N] [--slow-us U] [--log FILE] [--wait-signal]
 *
 * Defaults: 16 threads, 60 s, no slow calls. --wait-signal: print "ready PID" (flushed) and wait
 * for SIGUSR1 before creating the threads. SIGINT or SIGTERM stop the run early (exit 0).
 *
 * Log (written at exit):
 *   # pid PID
 *   # thread TID NAME                one per thread (hammer-K)
 *   TID hammer_outer COUNT
 *   TID hammer_inner COUNT
 *
 * Build like the other targets: gcc -O2 -g -fno-omit-frame-pointer -fcf-protection=none -pthread
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

struct worker {
	pthread_t thread;
	pid_t tid;
	int index;
	uint64_t outer, inner;
};

static struct worker workers[MAX_THREADS];
static atomic_int stop;
static long slow_every, slow_us;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Probed functions: external, never inlined or cloned, start with `push %rbp`. */
__attribute__((noinline, noipa, used)) uint64_t hammer_inner(struct worker *w);
__attribute__((noinline, noipa, used)) uint64_t hammer_outer(struct worker *w);

__attribute__((noinline, noipa, used)) uint64_t hammer_inner(struct worker *w)
{
	uint64_t n = ++w->inner;

	if (slow_every && n % slow_every == 0) {
		uint64_t end = now_ns() + slow_us * 1000;

		while (now_ns() < end)
			;
	}
	return n;
}

__attribute__((noinline, noipa, used)) uint64_t hammer_outer(struct worker *w)
{
	w->outer++;
	return hammer_inner(w) + 1;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char name[16];

	w->tid = syscall(SYS_gettid);
	snprintf(name, sizeof(name), "hammer-%d", w->index);
	pthread_setname_np(pthread_self(), name);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		hammer_outer(w);
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: hammer [--threads T] [--seconds S] [--slow-every N] [--slow-us U] "
			"[--log FILE] [--wait-signal]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *log_path = NULL;
	int nthreads = 16, wait_signal = 0;
	long seconds = 60;
	struct timespec timeout;
	uint64_t total = 0;
	sigset_t set;
	int sig;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int has_value = i + 1 < argc;

		if (!strcmp(a, "--threads") && has_value)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(a, "--seconds") && has_value)
			seconds = atol(argv[++i]);
		else if (!strcmp(a, "--slow-every") && has_value)
			slow_every = atol(argv[++i]);
		else if (!strcmp(a, "--slow-us") && has_value)
			slow_us = atol(argv[++i]);
		else if (!strcmp(a, "--log") && has_value)
			log_path = argv[++i];
		else if (!strcmp(a, "--wait-signal"))
			wait_signal = 1;
		else
			usage();
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || seconds < 1 || slow_every < 0 || slow_us < 0)
		usage();
	/* Signals are taken by sigwait/sigtimedwait in the main thread only. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (wait_signal) {
		printf("ready %d\n", getpid());
		fflush(stdout);
		do
			sig = sigwaitinfo(&set, NULL);
		while (sig < 0);
		if (sig != SIGUSR1)
			return 0;
	}
	for (int i = 0; i < nthreads; i++) {
		workers[i].index = i;
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i])) {
			fprintf(stderr, "hammer: cannot create thread %d\n", i);
			return 1;
		}
	}
	sigdelset(&set, SIGUSR1);
	timeout.tv_sec = seconds;
	timeout.tv_nsec = 0;
	/* SIGINT/SIGTERM or the end of the run; EINTR cannot happen with these blocked */
	sigtimedwait(&set, NULL, &timeout);
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(workers[i].thread, NULL);
	if (log_path) {
		FILE *f = fopen(log_path, "w");

		if (!f) {
			perror(log_path);
			return 1;
		}
		fprintf(f, "# pid %d\n", getpid());
		for (int i = 0; i < nthreads; i++)
			fprintf(f, "# thread %d hammer-%d\n", workers[i].tid, i);
		for (int i = 0; i < nthreads; i++)
			fprintf(f, "%d hammer_outer %llu\n%d hammer_inner %llu\n", workers[i].tid,
				(unsigned long long)workers[i].outer, workers[i].tid,
				(unsigned long long)workers[i].inner);
		if (fclose(f)) {
			perror(log_path);
			return 1;
		}
	}
	for (int i = 0; i < nthreads; i++)
		total += workers[i].outer + workers[i].inner;
	fprintf(stderr, "hammer: %d threads, %llu calls in %ld s\n", nthreads,
		(unsigned long long)total, seconds);
	return 0;
}
