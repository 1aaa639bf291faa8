// SPDX-License-Identifier: MIT
/* More USDT sites with an argument than the BPF side keeps argument layouts for (4,096): 4,352
 * sites of tracer_many:hit, each passing its own index. Prints "ready PID", waits for SIGUSR1,
 * runs every site ROUNDS times (default 3) and exits.
 *
 *   usdt_many [ROUNDS]
 */
#include <sys/sdt.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define SITE(i) DTRACE_PROBE1(tracer_many, hit, (long)(i));
#define SITES4(i) SITE(i) SITE((i) + 1) SITE((i) + 2) SITE((i) + 3)
#define SITES16(i) SITES4(i) SITES4((i) + 4) SITES4((i) + 8) SITES4((i) + 12)
#define SITES64(i) SITES16(i) SITES16((i) + 16) SITES16((i) + 32) SITES16((i) + 48)
#define SITES256(i) SITES64(i) SITES64((i) + 64) SITES64((i) + 128) SITES64((i) + 192)
#define SITES1024(i) SITES256(i) SITES256((i) + 256) SITES256((i) + 512) SITES256((i) + 768)

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static void __attribute__((noinline)) all_sites(void)
{
	SITES1024(0)
	SITES1024(1024)
	SITES1024(2048)
	SITES1024(3072)
	SITES256(4096)
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3;

	signal(SIGUSR1, on_usr1);
	printf("ready %d\n", getpid());
	fflush(stdout);
	while (!go)
		pause();
	for (int r = 0; r < rounds; r++)
		all_sites();
	return 0;
}
