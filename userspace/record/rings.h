/* SPDX-License-Identifier: MIT */
/* The BPF programs' ring buffers, one per CPU, read as one stream in time order.
 *
 * Each CPU writes its own ring (bpf/tracer.bpf.h), so a thread's wake-up on one CPU and its
 * switch-in on another, or a span that ends on another CPU than its Python caller's read, are
 * in different rings. The reader hands out the oldest record at the head of any ring (records
 * carry their time: a span its end, the others their ts); a ring keeps its own order. A ring
 * that has nothing to read may still get records stamped before now (a program that read the
 * clock and has not submitted yet): while one is empty, records newer than the caller's
 * watermark stay where they are, for a later pass. */
#ifndef TRACER_RINGS_H
#define TRACER_RINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One ring, as the kernel lays it out: the consumer position on a page of its own (written
 * here), the producer position, then the data, mapped twice so that no record wraps. */
struct cpu_ring {
	uint64_t *consumer_pos;
	const uint64_t *producer_pos;
	const uint8_t *data;
	uint64_t mask; /* data size - 1 (a power of two) */
	/* one pass */
	uint64_t pos, end; /* read up to end: the producer position when the pass began */
	bool head;	   /* a record at pos ready to hand out */
	uint64_t key;	   /* its time */
	uint32_t len;
	/* mappings (none for a ring in plain memory, as the unit test builds) */
	void *cons_map, *prod_map;
	size_t prod_len;
	int fd;
};

struct rings {
	struct cpu_ring *v;
	size_t n;
	uint32_t size; /* bytes of each ring */
};

typedef int (*rings_cb)(void *ctx, void *data, size_t size);

/* The ring size per CPU: total_bytes split among ncpu, a power of two, at least 256 KB. */
uint32_t rings__size(uint64_t total_bytes, size_t ncpu);
/* Creates a ring of rs->size bytes per CPU id below ncpu, puts each in outer_fd (the BPF
 * array of rings) and maps it. 0 or -errno. */
int rings__create(struct rings *rs, int outer_fd, size_t ncpu, uint32_t size);
/* Adds every ring to epfd, edge-triggered (a wake-up from BPF, not data left for later). */
int rings__watch(const struct rings *rs, int epfd, uint64_t data);
/* Hands records to cb in time order, those up to upto (CLOCK_MONOTONIC ns; UINT64_MAX: all)
 * while a ring is empty. Returns the number handed out, or cb's negative return (the record
 * it returned it for counts as consumed). */
int64_t rings__consume(struct rings *rs, uint64_t upto, rings_cb cb, void *ctx);
void rings__free(struct rings *rs);

/* The time a record is ordered by. */
uint64_t rings__record_time(const void *data, size_t size);

#endif
