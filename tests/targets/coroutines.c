// SPDX-License-Identifier: MIT
/* Coroutines with swapcontext, switching stacks inside probed functions: produce() runs on the
 * coroutine's stack and yields to consume() on the main stack from its middle, so their calls
 * return in an order no single stack has. A return probe on either would return onto the wrong
 * stack. Prints "ready PID", waits for SIGUSR1 (with --wait-signal), runs N rounds, then prints
 * "sum S" (the sum of 0..N-1, computed through the coroutine) and exits 0.
 *   coroutines [--wait-signal] N */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static ucontext_t main_ctx, co_ctx;
static volatile long value;
static volatile sig_atomic_t go;

/* on the coroutine's stack: hands i over, switching to the main stack in its middle */
__attribute__((noinline)) void produce(long i)
{
	value = i;
	swapcontext(&co_ctx, &main_ctx);
	value = -1;
}

static void coroutine(void)
{
	for (long i = 0;; i++)
		produce(i);
}

/* on the main stack: switches into the coroutine until it yields a value */
__attribute__((noinline)) long consume(void)
{
	swapcontext(&main_ctx, &co_ctx);
	return value;
}

static void on_usr1(int sig)
{
	go = sig;
}

int main(int argc, char **argv)
{
	static char stack[256 * 1024];
	struct timespec pause = { 0, 200 * 1000 };
	int wait = argc > 1 && !strcmp(argv[1], "--wait-signal");
	long n = argc > 1 + wait ? atol(argv[1 + wait]) : 1000;
	static long sum; /* static: swapcontext returns twice, as setjmp does */

	signal(SIGUSR1, on_usr1);
	printf("ready %d\n", getpid());
	fflush(stdout);
	while (wait && !go)
		nanosleep(&pause, NULL);
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = sizeof(stack);
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, coroutine, 0);
	for (long i = 0; i < n; i++) {
		sum += consume();
		nanosleep(&pause, NULL);
	}
	printf("sum %ld\n", sum);
	return 0;
}
