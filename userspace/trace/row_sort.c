// SPDX-License-Identifier: MIT
#include "trace/row_sort.h"
#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	int64_t key;
	uint64_t seq; /* arrival: equal keys keep their order */
	size_t off, len;
};

/* A sorted run in a temporary file: records of key, seq, len, then the row. */
struct run {
	FILE *f;
	struct entry head; /* its next row, in buf; len (size_t)-1 when it is done */
	char *buf;
	size_t cap;
};

struct row_sort {
	size_t chunk_bytes;
	char *bytes; /* the rows of the chunk in memory */
	size_t nbytes, cap_bytes;
	struct entry *v;
	size_t n, cap;
	uint64_t seq;
	struct run *runs;
	size_t nruns;
};

struct row_sort *row_sort__new(size_t chunk_bytes)
{
	struct row_sort *s = xcalloc(1, sizeof(*s));

	s->chunk_bytes = chunk_bytes;
	return s;
}

static int by_key(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The chunk in memory, sorted, to a new run. */
static int spill(struct row_sort *s)
{
	struct run *r;
	FILE *f = tmpfile();

	if (!f)
		return -errno;
	qsort(s->v, s->n, sizeof(*s->v), by_key);
	for (size_t i = 0; i < s->n; i++) {
		const struct entry *e = &s->v[i];

		fwrite(&e->key, sizeof(e->key), 1, f);
		fwrite(&e->seq, sizeof(e->seq), 1, f);
		fwrite(&e->len, sizeof(e->len), 1, f);
		fwrite(s->bytes + e->off, 1, e->len, f);
	}
	if (fflush(f) || ferror(f) || fseek(f, 0, SEEK_SET)) {
		int ret = -(errno ? errno : EIO);

		fclose(f);
		return ret;
	}
	s->runs = xrealloc(s->runs, s->nruns + 1, sizeof(*s->runs));
	r = &s->runs[s->nruns++];
	memset(r, 0, sizeof(*r));
	r->f = f;
	s->n = s->nbytes = 0;
	return 0;
}

int row_sort__add(struct row_sort *s, int64_t key, const char *row, size_t len)
{
	int ret = 0;

	if (s->nbytes + len > s->chunk_bytes && s->n)
		ret = spill(s);
	if (s->nbytes + len > s->cap_bytes) {
		s->cap_bytes = (s->nbytes + len) * 2;
		s->bytes = xrealloc(s->bytes, s->cap_bytes, 1);
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->v = xrealloc(s->v, s->cap, sizeof(*s->v));
	}
	memcpy(s->bytes + s->nbytes, row, len);
	s->v[s->n++] = (struct entry){ key, s->seq++, s->nbytes, len };
	s->nbytes += len;
	return ret;
}

/* The run's next row into its head; false when it has none. */
static bool advance(struct run *r)
{
	struct entry *e = &r->head;

	if (fread(&e->key, sizeof(e->key), 1, r->f) != 1 ||
	    fread(&e->seq, sizeof(e->seq), 1, r->f) != 1 ||
	    fread(&e->len, sizeof(e->len), 1, r->f) != 1) {
		e->len = (size_t)-1;
		return false;
	}
	if (e->len > r->cap) {
		r->cap = e->len;
		r->buf = xrealloc(r->buf, r->cap, 1);
	}
	if (fread(r->buf, 1, e->len, r->f) != e->len) {
		e->len = (size_t)-1;
		return false;
	}
	return true;
}

int row_sort__write(struct row_sort *s, FILE *out)
{
	int ret;

	if (!s->nruns) { /* it all fit in memory */
		if (s->n)
			qsort(s->v, s->n, sizeof(*s->v), by_key);
		for (size_t i = 0; i < s->n; i++)
			fwrite(s->bytes + s->v[i].off, 1, s->v[i].len, out);
		return ferror(out) ? -EIO : 0;
	}
	if (s->n && (ret = spill(s)))
		return ret;
	for (size_t i = 0; i < s->nruns; i++)
		advance(&s->runs[i]);
	for (;;) { /* a handful of runs: the smallest head by a look at each */
		struct run *min = NULL;

		for (size_t i = 0; i < s->nruns; i++)
			if (s->runs[i].head.len != (size_t)-1 &&
			    (!min || by_key(&s->runs[i].head, &min->head) < 0))
				min = &s->runs[i];
		if (!min)
			break;
		fwrite(min->buf, 1, min->head.len, out);
		advance(min);
	}
	for (size_t i = 0; i < s->nruns; i++)
		if (ferror(s->runs[i].f))
			return -EIO;
	return ferror(out) ? -EIO : 0;
}

size_t row_sort__runs(const struct row_sort *s)
{
	return s->nruns;
}

void row_sort__free(struct row_sort *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nruns; i++) {
		fclose(s->runs[i].f);
		free(s->runs[i].buf);
	}
	free(s->runs);
	free(s->bytes);
	free(s->v);
	free(s);
}
