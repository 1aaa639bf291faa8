/* SPDX-License-Identifier: MIT */
/* Creating every output file safely: tracer runs as root, usually through sudo. */
#ifndef TRACER_TRACE_FILE_H
#define TRACER_TRACE_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* How a new file takes its name. */
enum trace_file_how {
	/* written under its name from the start (a recording: a kill leaves what was written,
	 * for `tracer repair`); a previous file is kept as path.old (as perf does) */
	TF_IN_PLACE,
	/* written under a fresh name beside it (tmp), which takes path's name when complete
	 * (trace_file__commit): export, merge, report --html, repair */
	TF_RENAME,
};

/* The one output policy, for every file tracer writes. Opens path for writing: never through
 * a symbolic link (the file's own, or another user's on the way to it), never over a file that
 * is not a regular file, that the invoking user does not own or that has other hard links;
 * created at a name nobody could have prepared (O_EXCL), readable by its owner only and handed
 * to the invoking user (SUDO_UID/SUDO_GID under sudo). "-" is standard output (a copy of it).
 * TF_RENAME writes the name it chose into tmp (tmplen bytes; PATH_MAX + 16 fit). Returns the
 * fd, or -errno with a one-line message in err. */
int trace_file__create(const char *path, enum trace_file_how how, char *tmp, size_t tmplen,
		       char *err, size_t errlen);
/* TF_RENAME: the file at tmp takes path's name if keep, else is removed. 0 or -errno (then tmp
 * is removed too). */
int trace_file__commit(const char *tmp, const char *path, bool keep);

#endif
