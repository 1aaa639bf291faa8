/* SPDX-License-Identifier: MIT */
/* Buffered output for merge, export and report --html: a file (".gz" compresses) created by
 * the output policy (trace_file.h) without a name and given its name when complete, so a failed
 * or killed run never leaves half a file (and an input can be overwritten by its own merge); or
 * stdout. */
#ifndef TRACER_OUTFILE_H
#define TRACER_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct outfile;

/* path NULL or "-": stdout. 0, or -errno with a one-line message in err. */
int outfile__open(struct outfile **f, const char *path, char *err, size_t errlen);
void outfile__write(struct outfile *f, const char *p, size_t n);
void outfile__puts(struct outfile *f, const char *s);
void outfile__printf(struct outfile *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A stdio stream writing into f (fclose it before outfile__close); NULL on failure. */
FILE *outfile__stdio(struct outfile *f);
/* Finishes the file (renames it into place) if keep and nothing failed, else removes it.
 * 0 or the -errno of the first failure. */
int outfile__close(struct outfile *f, bool keep);

#endif
