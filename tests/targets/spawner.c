// SPDX-License-Identifier: MIT
/* Process shapes for tracer's tests. After SIGUSR1 (--wait-signal prints "ready PID" first):
 *   spawner --wait-signal fork N PROGRAM ARGS...: calls work() N times, forks a child that calls
 *     work() N+2 times and exits, then forks one that execs PROGRAM ARGS; prints
 *     "child PID" and "exec PID", waits for both.
 *   spawner --wait-signal dlopen LIBRARY N: loads LIBRARY with dlopen, then calls its
 *     plugin_work() N times, 10 ms apart; prints "loaded" when the library is in.
 *   spawner --wait-signal thread-exec N PROGRAM ARGS...: a second thread calls work() N times,
 *     prints "thread TID", and execs PROGRAM ARGS (the kernel gives it the main thread's id).
 *   spawner --wait-signal churn N: N children one after another, each calls work() once and
 *     exits, reaped before the next starts; prints "last PID" (the last child) at the end.
 *   spawner --wait-signal fork-steady MS: forks a child that calls work() once a millisecond
 *     for MS ms; prints "child PID NS", NS the CLOCK_MONOTONIC time of the fork, and waits.
 *   spawner work N: calls work() N times, at once.
 */
#define _GNU_SOURCE /* gettid */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline, noipa, used)) int work(int i)
{
	volatile int x = i;

	return x + 1;
}

static void wait_signal(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", getpid());
	fflush(stdout);
	sigwait(&set, &sig);
}

static int do_fork(int n, char **prog)
{
	pid_t child, exec_child;
	int st1, st2;

	for (int i = 0; i < n; i++)
		work(i);
	child = fork();
	if (child == 0) {
		for (int i = 0; i < n + 2; i++)
			work(i);
		_exit(0);
	}
	exec_child = fork();
	if (exec_child == 0) {
		execv(prog[0], prog);
		_exit(127);
	}
	printf("child %d\nexec %d\n", child, exec_child);
	fflush(stdout);
	waitpid(child, &st1, 0);
	waitpid(exec_child, &st2, 0);
	return WIFEXITED(st1) && WIFEXITED(st2) && !WEXITSTATUS(st1) && !WEXITSTATUS(st2) ? 0 : 1;
}

static int do_churn(int n)
{
	pid_t child = 0;
	int st;

	for (int i = 0; i < n; i++) {
		child = fork();
		if (child < 0)
			return 1;
		if (child == 0) {
			work(i);
			_exit(0);
		}
		if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	printf("last %d\n", child);
	fflush(stdout);
	return 0;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int do_fork_steady(int ms)
{
	struct timespec one_ms = { 0, 1000 * 1000 };
	uint64_t forked = monotonic_ns(), end = forked + (uint64_t)ms * 1000000;
	pid_t child = fork();
	int st;

	if (child < 0)
		return 1;
	if (child == 0) {
		for (int i = 0; monotonic_ns() < end; i++) {
			work(i);
			nanosleep(&one_ms, NULL);
		}
		_exit(0);
	}
	printf("child %d %llu\n", child, (unsigned long long)forked);
	fflush(stdout);
	return waitpid(child, &st, 0) == child && WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : 1;
}

struct thread_exec {
	int n;
	char **prog;
};

static void *exec_from_thread(void *arg)
{
	const struct thread_exec *te = arg;

	for (int i = 0; i < te->n; i++)
		work(i);
	printf("thread %d\n", gettid());
	fflush(stdout);
	execv(te->prog[0], te->prog);
	_exit(127);
}

static int do_thread_exec(int n, char **prog)
{
	struct thread_exec te = { n, prog };
	pthread_t t;

	if (pthread_create(&t, NULL, exec_from_thread, &te))
		return 1;
	pthread_join(t, NULL); /* the exec ends this process image first */
	return 1;
}

static int do_dlopen(const char *lib, int n)
{
	struct timespec ten_ms = { 0, 10 * 1000 * 1000 };
	int (*fn)(int);
	void *h = dlopen(lib, RTLD_NOW);

	if (!h || !(fn = (int (*)(int))dlsym(h, "plugin_work"))) {
		fprintf(stderr, "spawner: %s\n", dlerror());
		return 1;
	}
	printf("loaded\n");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		fn(i);
		nanosleep(&ten_ms, NULL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "--wait-signal") && !strcmp(argv[2], "fork")) {
		wait_signal();
		return do_fork(atoi(argv[3]), &argv[4]);
	}
	if (argc >= 5 && !strcmp(argv[1], "--wait-signal") && !strcmp(argv[2], "thread-exec")) {
		wait_signal();
		return do_thread_exec(atoi(argv[3]), &argv[4]);
	}
	if (argc == 4 && !strcmp(argv[1], "--wait-signal") && !strcmp(argv[2], "churn")) {
		wait_signal();
		return do_churn(atoi(argv[3]));
	}
	if (argc == 4 && !strcmp(argv[1], "--wait-signal") && !strcmp(argv[2], "fork-steady")) {
		wait_signal();
		return do_fork_steady(atoi(argv[3]));
	}
	if (argc == 5 && !strcmp(argv[1], "--wait-signal") && !strcmp(argv[2], "dlopen")) {
		wait_signal();
		return do_dlopen(argv[3], atoi(argv[4]));
	}
	if (argc == 3 && !strcmp(argv[1], "work")) {
		for (int i = 0; i < atoi(argv[2]); i++)
			work(i);
		return 0;
	}
	/* launch mode (tracer -- spawner dlopen ...): at once */
	if (argc == 4 && !strcmp(argv[1], "dlopen"))
		return do_dlopen(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: spawner --wait-signal fork|thread-exec N PROGRAM ARGS... | "
			"--wait-signal churn N | --wait-signal fork-steady MS | [--wait-signal] dlopen "
			"LIBRARY N | work N\n");
	return 2;
}
