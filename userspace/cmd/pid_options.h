/* SPDX-License-Identifier: MIT */
/* The options `tracer list` and `tracer packs` share: -p/--pid PID and -h/--help. */
#ifndef TRACER_PID_OPTIONS_H
#define TRACER_PID_OPTIONS_H

/* Parses them (pid stays 0 without -p); on return optind is the first other argument.
 * Returns -1 to go on, or the exit status to return: 0 after printing usage for --help,
 * 2 after a usage error. */
int pid_options__parse(int argc, char **argv, const char *cmd, const char *usage, int *pid);

#endif
