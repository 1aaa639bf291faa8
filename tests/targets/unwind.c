// SPDX-License-Identifier: MIT
/* A target whose calls do not all return in order: longjmp out of probed frames, recursion
 * deeper than the kernel's 64 hijacked returns, and a thread that exits inside a probed call.
 * It logs what it did so a test can check that tracer keeps the nesting right and counts what
 * it could not see.
 *
 * Usage: unwind --wait-signal ROUNDS DEPTH
 * Prints "ready PID"; after SIGUSR1 runs ROUNDS rounds of: jump_outer -> jump_inner, which
 * longjmps back past both; recurse(DEPTH); then one thread that calls exit_inside(), which calls
 * pthread_exit. Then it prints "done" and waits for stdin to close (so a test can stop tracer
 * while the process lives). */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define PROBED __attribute__((noinline, noipa, used))

static jmp_buf env;
static volatile int sink;

PROBED void jump_inner(int i)
{
	sink += i;
	longjmp(env, 1);
}

PROBED void jump_outer(int i)
{
	sink += i;
	jump_inner(i);
	sink -= i; /* never reached */
}

PROBED int recurse(int n)
{
	int r = 0;

	if (n > 0)
		r = recurse(n - 1) + 1;
	/* keeps the compiler from turning the recursion into a loop */
	__asm__ volatile("" : "+r"(r) : : "memory");
	return r;
}

PROBED void exit_inside(void)
{
	sink++;
	pthread_exit(NULL);
}

static void *exiter(void *arg)
{
	(void)arg;
	exit_inside();
	return NULL;
}

PROBED int leaf(int i)
{
	sink += i;
	return i;
}

int main(int argc, char **argv)
{
	int rounds, depth;
	sigset_t set;
	pthread_t t;
	int sig;

	if (argc != 4) {
		fprintf(stderr, "usage: unwind --wait-signal ROUNDS DEPTH\n");
		return 2;
	}
	rounds = atoi(argv[2]);
	depth = atoi(argv[3]);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", getpid());
	fflush(stdout);
	sigwait(&set, &sig);
	for (volatile int r = 0; r < rounds; r++) {
		if (!setjmp(env))
			jump_outer(r);
		leaf(r); /* a call at the depth the longjmp'd frames had */
		recurse(depth);
	}
	pthread_create(&t, NULL, exiter, NULL);
	pthread_join(t, NULL);
	printf("done\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	return 0;
}
