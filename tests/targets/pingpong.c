// SPDX-License-Identifier: MIT
/* Wake-ups from one CPU to another: "ping" on CPU 0 and "pong" on CPU 1 take turns, each
 * waking the other through a pipe from inside its probed call (ping_call, pong_call), then
 * waiting outside it. The waking is recorded on the waker's CPU, the woken thread's next span
 * on the other.
 *   pingpong ROUNDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int to_pong[2], to_ping[2];
static long rounds;

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

__attribute__((noinline, noipa, used)) void ping_call(int fd)
{
	char c = 1;

	if (write(fd, &c, 1) != 1)
		exit(1);
}

__attribute__((noinline, noipa, used)) void pong_call(int fd)
{
	char c = 1;

	if (write(fd, &c, 1) != 1)
		exit(1);
}

static void *pong(void *arg __attribute__((unused)))
{
	char c;

	pthread_setname_np(pthread_self(), "pong");
	pin(1);
	for (long i = 0; i < rounds; i++) {
		if (read(to_pong[0], &c, 1) != 1)
			exit(1);
		pong_call(to_ping[1]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char c;

	rounds = argc > 1 ? atol(argv[1]) : 1000;
	if (pipe(to_pong) || pipe(to_ping) || pthread_create(&t, NULL, pong, NULL))
		return 1;
	pthread_setname_np(pthread_self(), "ping");
	pin(0);
	for (long i = 0; i < rounds; i++) {
		ping_call(to_pong[1]);
		if (read(to_ping[0], &c, 1) != 1)
			return 1;
	}
	pthread_join(t, NULL);
	printf("%ld rounds\n", rounds);
	return 0;
}
