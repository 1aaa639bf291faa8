// SPDX-License-Identifier: MIT
/* The scheduler target of the benchmarks: PAIRS pairs of threads pass a byte back and forth
 * through two pipes, so each of them sleeps and is woken by the other all the time (a context
 * switch and a wake-up per pass). A pass is written inside switcher_pass() (probe it: the
 * wake-ups then come from inside a span, as in a traced pipeline).
 *
 * Usage: switcher [-p PAIRS] [-s SECONDS] [-r RATE]   (defaults: 8 pairs, 10 s, flat out)
 *   -r RATE  round trips per second in all, spread over the pairs (each pair's first thread
 *            sleeps on a timer until its next one is due: those wake-ups come from the timer
 *            interrupt)
 * Prints "ready PID" when its threads run, and "passes N" at the end. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static long passes;
static double period_s; /* between one pair's round trips; 0: flat out */

struct pair {
	int to_b[2], to_a[2];
	pthread_t a, b;
	long n;
};

__attribute__((noinline)) int switcher_pass(int fd)
{
	char c = 1;

	return write(fd, &c, 1) == 1 ? 0 : -1;
}

static void *side_a(void *arg)
{
	struct pair *p = arg;
	struct timespec due;
	char c;

	clock_gettime(CLOCK_MONOTONIC, &due);
	while (!stop) {
		if (switcher_pass(p->to_b[1]) || read(p->to_a[0], &c, 1) != 1)
			break;
		p->n++;
		if (period_s > 0) {
			long ns = due.tv_nsec + (long)(period_s * 1e9);

			due.tv_sec += ns / 1000000000;
			due.tv_nsec = ns % 1000000000;
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL);
		}
	}
	close(p->to_b[1]); /* b sees the end */
	return NULL;
}

static void *side_b(void *arg)
{
	struct pair *p = arg;
	char c;

	while (read(p->to_b[0], &c, 1) == 1)
		if (switcher_pass(p->to_a[1]))
			break;
	close(p->to_a[1]);
	return NULL;
}

int main(int argc, char **argv)
{
	int npairs = 8, seconds = 10, opt;
	double rate = 0;
	struct pair *v;

	while ((opt = getopt(argc, argv, "p:s:r:")) != -1) {
		if (opt == 'p')
			npairs = atoi(optarg);
		else if (opt == 's')
			seconds = atoi(optarg);
		else if (opt == 'r')
			rate = atof(optarg);
		else
			npairs = 0;
	}
	if (npairs < 1 || seconds < 1 || rate < 0) {
		fprintf(stderr, "usage: switcher [-p PAIRS] [-s SECONDS] [-r RATE]\n");
		return 2;
	}
	period_s = rate > 0 ? npairs / rate : 0;
	v = calloc(npairs, sizeof(*v));
	for (int i = 0; i < npairs; i++) {
		if (pipe(v[i].to_b) || pipe(v[i].to_a)) {
			perror("pipe");
			return 1;
		}
		pthread_create(&v[i].b, NULL, side_b, &v[i]);
		pthread_create(&v[i].a, NULL, side_a, &v[i]);
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	sleep(seconds);
	stop = 1;
	for (int i = 0; i < npairs; i++) {
		pthread_join(v[i].a, NULL);
		pthread_join(v[i].b, NULL);
		passes += v[i].n;
	}
	printf("passes %ld\n", passes);
	return 0;
}
