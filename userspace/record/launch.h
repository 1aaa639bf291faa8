/* SPDX-License-Identifier: MIT */
/* Launch mode (`tracer -- COMMAND`): start the command as the invoking user, held by ptrace at
 * its exec, so that tracer can attach before the program's own code runs. */
#ifndef TRACER_LAUNCH_H
#define TRACER_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

/* Forks and execs argv; returns with the child stopped right after the exec. With
 * stdout_to_stderr (the trace goes to standard output) the command writes its output to
 * standard error. 0 or -errno with a one-line message in err. */
int launch__start(char **argv, bool stdout_to_stderr, pid_t *pid, char *err, size_t errlen);

/* File offset of the ELF entry point of the child's executable: where it stops once the dynamic
 * loader has mapped its libraries. */
int launch__entry_offset(pid_t pid, uint64_t *offset);

/* Lets the child go from the exec to the entry point, where a probe stops it (SIGSTOP). 0, or
 * -ECHILD if it exited on the way (err says how). */
int launch__run_to_entry(pid_t pid, char *err, size_t errlen);

/* The exit status tracer should exit with: the command's, or 128 + the signal that killed it. */
int launch__exit_status(pid_t pid);
/* After the recording: sends forward_signal (if not 0) to the command, then waits for it to
 * exit. SIGINT, SIGTERM or SIGHUP meanwhile (a second Ctrl-C) kill it: tracer always ends,
 * whatever state the command is in. Its exit status, as launch__exit_status. */
int launch__wait(pid_t pid, int forward_signal);

#endif
