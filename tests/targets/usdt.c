// SPDX-License-Identifier: MIT
/* A program with USDT probes (SystemTap SDT, <sys/sdt.h>) guarded by semaphores: the ground
 * truth of tracer's USDT tests. Each step of its loop runs tracer_test:work__start(id, size)
 * ... tracer_test:work__done(id), spinning about a millisecond between them, and logs
 *
 *   ID START_NS END_NS SEMAPHORE
 *
 * (CLOCK_MONOTONIC; SEMAPHORE: the start probe's semaphore as the program saw it, non-zero
 * while something is attached). Prints "ready PID", then waits for SIGUSR1 with --wait-signal.
 *
 *   usdt [--wait-signal] [--steps N] [--log FILE]
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

unsigned short tracer_test_work__start_semaphore __attribute__((unused, section(".probes")));
unsigned short tracer_test_work__done_semaphore __attribute__((unused, section(".probes")));

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t spin(uint64_t ns)
{
	uint64_t end = now_ns() + ns, x = 0;

	while (now_ns() < end)
		x += x * 7 + 1;
	return x;
}

int main(int argc, char **argv)
{
	long steps = 300;
	const char *log_path = NULL;
	int wait_signal = 0;
	FILE *log = NULL;
	uint64_t *starts, *ends;
	int *sems;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait-signal"))
			wait_signal = 1;
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atol(argv[++i]);
		else if (!strcmp(argv[i], "--log") && i + 1 < argc)
			log_path = argv[++i];
	}
	starts = calloc(steps, sizeof(*starts));
	ends = calloc(steps, sizeof(*ends));
	sems = calloc(steps, sizeof(*sems));
	if (!starts || !ends || !sems)
		return 1;
	signal(SIGUSR1, on_usr1);
	printf("ready %d\n", getpid());
	fflush(stdout);
	while (wait_signal && !go)
		usleep(1000);
	for (long i = 0; i < steps; i++) {
		uint64_t size = 1000 + i % 7;

		starts[i] = now_ns();
		sems[i] = tracer_test_work__start_semaphore;
		DTRACE_PROBE2(tracer_test, work__start, i, size);
		spin(1000000);
		DTRACE_PROBE1(tracer_test, work__done, i);
		ends[i] = now_ns();
		usleep(2000);
	}
	if (log_path && (log = fopen(log_path, "w"))) {
		for (long i = 0; i < steps; i++)
			fprintf(log, "%ld %llu %llu %d\n", i, (unsigned long long)starts[i],
				(unsigned long long)ends[i], sems[i]);
		fclose(log);
	}
	return 0;
}
