// SPDX-License-Identifier: MIT
#include "record/rings.h"
#include "util/util.h"
#include "events.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stddef.h>
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIN_RING (256u << 10)

uint32_t rings__size(uint64_t total_bytes, size_t ncpu)
{
	uint64_t per = total_bytes / (ncpu ? ncpu : 1);
	uint32_t size = MIN_RING;

	while ((uint64_t)size * 2 <= per && size < (1u << 30))
		size *= 2;
	return size;
}

uint64_t rings__record_time(const void *data, size_t size)
{
	const struct span_rec *s = data;

	if (size < sizeof(__u32))
		return 0;
	switch (s->type) {
	case REC_SPAN:
		/* submitted when it ends */
		return size >= sizeof(*s) ? s->end_ns : 0;
	case REC_SWITCH:
		return size >= sizeof(struct switch_rec) ? ((const struct switch_rec *)data)->ts : 0;
	case REC_SWITCH_WAKE:
		/* the waking it carries is older: its line may follow later lines (trace-format.md) */
		return size >= sizeof(struct switch_wake_rec) ?
			       ((const struct switch_wake_rec *)data)->sw.ts :
			       0;
	case REC_WAKEUP:
		return size >= sizeof(struct wakeup_rec) ? ((const struct wakeup_rec *)data)->ts : 0;
	case REC_TASK:
		return size >= sizeof(struct task_rec) ? ((const struct task_rec *)data)->ts : 0;
	case REC_PY_STACK:
		return size >= offsetof(struct py_stack_rec, frames) ?
			       ((const struct py_stack_rec *)data)->ts :
			       0;
	}
	return 0; /* unknown: as soon as it is at the head of its ring */
}

static int map_ring(struct cpu_ring *r, int fd, uint32_t size)
{
	size_t page = sysconf(_SC_PAGESIZE);

	r->fd = fd;
	r->cons_map = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->cons_map == MAP_FAILED) {
		r->cons_map = NULL;
		return -errno;
	}
	r->prod_len = page + 2 * (size_t)size;
	r->prod_map = mmap(NULL, r->prod_len, PROT_READ, MAP_SHARED, fd, page);
	if (r->prod_map == MAP_FAILED) {
		r->prod_map = NULL;
		return -errno;
	}
	r->consumer_pos = r->cons_map;
	r->producer_pos = r->prod_map;
	r->data = (const uint8_t *)r->prod_map + page;
	r->mask = size - 1;
	return 0;
}

int rings__create(struct rings *rs, int outer_fd, size_t ncpu, uint32_t size)
{
	memset(rs, 0, sizeof(*rs));
	rs->v = xcalloc(ncpu, sizeof(*rs->v));
	rs->size = size;
	for (size_t i = 0; i < ncpu; i++)
		rs->v[i].fd = -1;
	for (size_t i = 0; i < ncpu; i++) {
		__u32 key = i;
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, NULL, 0, 0, size, NULL), err;

		rs->n = i + 1;
		if (fd < 0)
			return -errno;
		err = map_ring(&rs->v[i], fd, size);
		if (!err && bpf_map_update_elem(outer_fd, &key, &fd, BPF_ANY))
			err = -errno;
		if (err)
			return err;
	}
	return 0;
}

int rings__watch(const struct rings *rs, int epfd, uint64_t data)
{
	for (size_t i = 0; i < rs->n; i++) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = data };

		if (epoll_ctl(epfd, EPOLL_CTL_ADD, rs->v[i].fd, &ev))
			return -errno;
	}
	return 0;
}

/* The record at r->pos, if one is complete before r->end; skips discarded ones. */
static void peek(struct cpu_ring *r)
{
	r->head = false;
	while (r->pos < r->end) {
		const uint8_t *p = r->data + (r->pos & r->mask);
		uint32_t hdr = __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
		uint32_t len = hdr & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);

		if (hdr & BPF_RINGBUF_BUSY_BIT) { /* reserved, not submitted yet: next pass */
			r->end = r->pos;
			return;
		}
		if (!(hdr & BPF_RINGBUF_DISCARD_BIT)) {
			r->len = len;
			r->key = rings__record_time(p + BPF_RINGBUF_HDR_SZ, len);
			r->head = true;
			return;
		}
		r->pos += (len + BPF_RINGBUF_HDR_SZ + 7) & ~7ull;
		__atomic_store_n(r->consumer_pos, r->pos, __ATOMIC_RELEASE);
	}
}

int64_t rings__consume(struct rings *rs, uint64_t upto, rings_cb cb, void *ctx)
{
	int64_t n = 0;

	for (size_t i = 0; i < rs->n; i++) {
		struct cpu_ring *r = &rs->v[i];

		r->pos = *r->consumer_pos; /* only this reader moves it */
		r->end = __atomic_load_n(r->producer_pos, __ATOMIC_ACQUIRE);
		peek(r);
	}
	for (;;) {
		struct cpu_ring *best = NULL;
		bool empty = false;
		void *data;
		int ret;

		/* a few CPUs: a scan is cheaper than keeping a heap */
		for (size_t i = 0; i < rs->n; i++) {
			struct cpu_ring *r = &rs->v[i];

			if (!r->head)
				empty = true;
			else if (!best || r->key < best->key)
				best = r;
		}
		/* every ring has a record: the oldest head is the oldest record to come (a ring's
		 * later records are newer); one is empty: only what its late records cannot
		 * precede */
		if (!best || (empty && best->key > upto))
			return n;
		data = (void *)(best->data + (best->pos & best->mask) + BPF_RINGBUF_HDR_SZ);
		ret = cb(ctx, data, best->len);
		best->pos += (best->len + BPF_RINGBUF_HDR_SZ + 7) & ~7ull;
		__atomic_store_n(best->consumer_pos, best->pos, __ATOMIC_RELEASE);
		peek(best);
		n++;
		if (ret < 0)
			return ret;
	}
}

void rings__free(struct rings *rs)
{
	size_t page = sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < rs->n; i++) {
		struct cpu_ring *r = &rs->v[i];

		if (r->cons_map)
			munmap(r->cons_map, page);
		if (r->prod_map)
			munmap(r->prod_map, r->prod_len);
		if (r->fd >= 0)
			close(r->fd);
	}
	free(rs->v);
	memset(rs, 0, sizeof(*rs));
}
