// SPDX-License-Identifier: MIT
/* Timer wake-ups under a busy thread: "spinner" spins inside spin_work() (probed, 50 ms a call)
 * while "sleeper" sleeps 1 ms at a time, both on CPU 0. Each sleep ends in the timer
 * interrupt, on top of whatever runs on CPU 0: mostly spin_work(), which wakes no one.
 *   irqwake SECONDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile int stop;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin_work(void)
{
	double end = now_s() + 0.05;

	while (now_s() < end)
		;
}

static void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *spinner(void *arg)
{
	pthread_setname_np(pthread_self(), "spinner");
	pin_cpu0();
	while (!stop)
		spin_work();
	return arg;
}

static void *sleeper(void *arg)
{
	struct timespec ms = { 0, 1000 * 1000 };

	pthread_setname_np(pthread_self(), "sleeper");
	pin_cpu0();
	while (!stop)
		nanosleep(&ms, NULL);
	return arg;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1;
	struct timespec t = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	pthread_t a, b;

	pthread_create(&a, NULL, spinner, NULL);
	pthread_create(&b, NULL, sleeper, NULL);
	nanosleep(&t, NULL);
	stop = 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
