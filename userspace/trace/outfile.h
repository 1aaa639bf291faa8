/* SPDX-License-Identifier: MIT */
/* Buffered output for merge and export: a file (".gz" compresses) written under a temporary
 * name and renamed into place when complete, so a failed run never leaves half a file (and an
 * input can be overwritten by its own merge); a device, FIFO or symlink is written through;
 * or stdout. Created with mode 0600, like a recording: traces hold captured arguments. */
#ifndef TRACER_OUTFILE_H
#define TRACER_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct outfile;

/* path NULL or "-": stdout. 0 or -errno. */
int outfile__open(struct outfile **f, const char *path);
void outfile__write(struct outfile *f, const char *p, size_t n);
void outfile__puts(struct outfile *f, const char *s);
void outfile__printf(struct outfile *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A stdio stream writing into f (fclose it before outfile__close); NULL on failure. */
FILE *outfile__stdio(struct outfile *f);
/* Finishes the file (renames it into place) if keep and nothing failed, else removes it.
 * 0 or the -errno of the first failure. */
int outfile__close(struct outfile *f, bool keep);

#endif
