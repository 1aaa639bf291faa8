/* SPDX-License-Identifier: MIT */
/* Creating the trace file safely: tracer runs as root, usually through sudo. */
#ifndef TRACER_TRACE_FILE_H
#define TRACER_TRACE_FILE_H

#include <stddef.h>

/* Opens path for writing: never through a symbolic link, never over a file that is not a
 * regular file or that the invoking user does not own; a previous file is kept as path.old (as
 * perf does); created readable by its owner only and handed to the invoking user
 * (SUDO_UID/SUDO_GID under sudo). "-" is standard output (a copy of it). Returns the fd, or
 * -errno with a one-line message in err. */
int trace_file__create(const char *path, char *err, size_t errlen);

#endif
