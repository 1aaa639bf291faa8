/* SPDX-License-Identifier: MIT */
/* Creating every output file safely: tracer runs as root, usually through sudo. */
#ifndef TRACER_TRACE_FILE_H
#define TRACER_TRACE_FILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* How a new file takes its name. */
enum trace_file_how {
	/* written under its name from the start (a recording: a kill leaves what was written,
	 * for `tracer repair`); a previous file is kept as path.old (as perf does) */
	TF_IN_PLACE,
	/* written as an unnamed file in path's folder (O_TMPFILE; a fresh random name beside
	 * path where the file system has none), which takes path's name when complete
	 * (trace_file__commit): export, merge, report --html, repair. A kill leaves nothing. */
	TF_RENAME,
};

/* A TF_RENAME file until it takes its name. */
struct trace_file_tmp {
	int fd;			  /* open until trace_file__commit, -1 for standard output */
	char name[PATH_MAX + 16]; /* its name beside path, "" while it has none */
};

/* The one output policy, for every file tracer writes. Opens path for writing: never through
 * a symbolic link (the file's own, or another user's on the way to it), never over a file that
 * is not a regular file, that the invoking user does not own or that has other hard links;
 * created where nobody could have prepared it (O_TMPFILE or O_EXCL), readable by its owner only
 * and handed to the invoking user (SUDO_UID/SUDO_GID under sudo). "-" is standard output (a copy
 * of it). TF_RENAME needs tmp (NULL for TF_IN_PLACE). Returns an fd to write to (with
 * TF_RENAME one of its own: closing it leaves tmp->fd open), or -errno with a one-line message
 * in err. */
int trace_file__create(const char *path, enum trace_file_how how, struct trace_file_tmp *tmp,
		       char *err, size_t errlen);
/* TF_RENAME: tmp takes path's name if keep, else is removed; its fd is closed. 0 or -errno
 * (then it is removed too). */
int trace_file__commit(struct trace_file_tmp *tmp, const char *path, bool keep);

#endif
