/* SPDX-License-Identifier: MIT */
/* The usage error for an option getopt_long did not know, with the long options near it:
 * "unknown option '--duraton'; did you mean: --duration". */
#ifndef TRACER_UNKNOWN_OPTION_H
#define TRACER_UNKNOWN_OPTION_H

#include <getopt.h>

/* arg: the option as given (argv[optind - 1]); cmd as for usage_error. Returns 2. */
int unknown_option(const char *cmd, const char *arg, const struct option *longopts);

#endif
