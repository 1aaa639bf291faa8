/* SPDX-License-Identifier: MIT */
/* Rows of text sorted by a key (export: spans by start time; a trace holds them in completion
 * order) in bounded memory: rows gather in memory, a full chunk is sorted and written to a
 * temporary file, and the sorted runs are merged at the end. Rows with equal keys keep the
 * order they came in. */
#ifndef TRACER_ROW_SORT_H
#define TRACER_ROW_SORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct row_sort;

/* chunk_bytes: the memory a chunk of rows may take before it is sorted out to a file. */
struct row_sort *row_sort__new(size_t chunk_bytes);
/* 0, or -errno when a temporary file could not be written. */
int row_sort__add(struct row_sort *s, int64_t key, const char *row, size_t len);
/* Writes every row to out in key order. 0 or -errno. */
int row_sort__write(struct row_sort *s, FILE *out);
/* Runs written to temporary files so far (tests). */
size_t row_sort__runs(const struct row_sort *s);
void row_sort__free(struct row_sort *s);

#endif
