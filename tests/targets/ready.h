/* SPDX-License-Identifier: MIT */
/* The start of a test target: "ready PID" on stdout, then, with wait_signal, a wait for SIGUSR1.
 * SIGUSR1 stays blocked (a stray one does nothing); SIGINT and SIGTERM call on_stop, and end the
 * wait too. Returns 1 when the wait ended by one of them (the target stops), else 0. */
#ifndef TARGET_READY_H
#define TARGET_READY_H

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static int ready_then_wait(int wait_signal, void (*on_stop)(int))
{
	sigset_t set;
	int sig, stopped = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (wait_signal && !sigwait(&set, &sig) && sig != SIGUSR1)
		stopped = 1;
	sigdelset(&set, SIGUSR1);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	return stopped;
}

#endif
