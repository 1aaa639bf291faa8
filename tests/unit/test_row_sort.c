// SPDX-License-Identifier: MIT
/* Unit test of userspace/trace/row_sort.c: rows come out by key, equal keys in arrival order,
 * whether they fit in memory or go through sorted runs in temporary files. */
#include <stdlib.h>
#include <string.h>

#include "trace/row_sort.h"
#include "unit.h"

/* n rows with keys from a small range (many equal), written through a sort with this chunk;
 * each row says its key and arrival. */
static void check_sorted(size_t n, size_t chunk, size_t min_runs)
{
	struct row_sort *s = row_sort__new(chunk);
	char *out = NULL, row[64];
	size_t len = 0, rows = 0;
	long last_key = -1, last_seq = -1;
	unsigned seed = 1;
	FILE *f = open_memstream(&out, &len);

	for (size_t i = 0; i < n; i++) {
		long key = rand_r(&seed) % 97;
		int l = snprintf(row, sizeof(row), "%ld %zu\n", key, i);

		CHECK(row_sort__add(s, key, row, l) == 0);
	}
	CHECK(row_sort__runs(s) >= min_runs);
	CHECK(row_sort__write(s, f) == 0);
	fclose(f);
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"), rows++) {
		long key = strtol(line, &line, 10), seq = strtol(line, NULL, 10);

		CHECK(key > last_key || (key == last_key && seq > last_seq));
		last_key = key;
		last_seq = seq;
	}
	CHECK(rows == n);
	free(out);
	row_sort__free(s);
}

static void test_in_memory(void)
{
	check_sorted(5000, 1 << 20, 0);
}

static void test_runs_merged(void)
{
	check_sorted(20000, 4096, 20); /* ~200 KB of rows in 4 KB runs */
}

static void test_empty(void)
{
	struct row_sort *s = row_sort__new(100);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CHECK(row_sort__write(s, f) == 0);
	fclose(f);
	CHECK(len == 0);
	free(out);
	row_sort__free(s);
}

int main(void)
{
	RUN(test_in_memory);
	RUN(test_runs_merged);
	RUN(test_empty);
	UNIT_EXIT();
}
