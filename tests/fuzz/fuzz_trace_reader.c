// SPDX-License-Identifier: MIT
/* Fuzzes the streaming trace reader (userspace/trace/trace_reader.c) that report, merge and export
 * use on files from anywhere: the input is handed over as a file (a memfd opened by path, plain
 * or gzip). Checks what trace_reader.h promises: every item within its bounds, the end stays the
 * end, an error says "FILE:LINE: what", and asking for events only yields the same events as
 * asking for everything. Also checks json_us_to_ns against exact integer arithmetic. */
#include "fuzz.h"
#include "trace/trace_reader.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int memfd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = memfd_create("fuzz-trace", MFD_CLOEXEC);
	if (memfd < 0) {
		perror("memfd_create");
		exit(1);
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	return 0;
}

struct pass {
	int ret; /* 0 at the end, -errno on an error */
	uint64_t events, sched, meta;
	uint64_t hash; /* of the events' texts, in order */
};

static uint64_t mix(uint64_t h, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	return h * 0x100000001b3ull;
}

/* No control character (C0, DEL, C1) and valid UTF-8: a name goes to terminals and CSV. */
static void check_printable(const char *s, const char *what)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; p[i]; i++) {
		fuzz_check(p[i] >= 0x20 && p[i] != 0x7f, "%s: control byte %#x", what, p[i]);
		fuzz_check(!(p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] < 0xa0), "%s: C1", what);
		if (p[i] >= 0x80) {
			size_t n = p[i] >= 0xf0 ? 4 : p[i] >= 0xe0 ? 3 : 2;

			fuzz_check(p[i] >= 0xc2 && p[i] <= 0xf4, "%s: byte %#x", what, p[i]);
			for (size_t k = 1; k < n; k++)
				fuzz_check((p[i + k] & 0xc0) == 0x80, "%s: cut UTF-8", what);
			i += n - 1;
		}
	}
}

static void check_event(const struct trace_event *ev)
{
	const struct text_span *spans[] = { &ev->ts_at, &ev->pid_at, &ev->tid_at, &ev->args_at,
					    &ev->id_at, &ev->bind_id_at, &ev->name_at, &ev->cat_at };

	fuzz_check(ev->text && ev->len && ev->len <= TR_MAX_VALUE, "event of %zu bytes", ev->len);
	fuzz_check(ev->name && ev->cat, "event without name or cat strings");
	for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++)
		fuzz_check((uint64_t)spans[i]->off + spans[i]->len <= ev->len,
			   "value %zu at %u+%u outside the event (%zu bytes)", i, spans[i]->off,
			   spans[i]->len, ev->len);
	/* the strings were unescaped into memory of their own, safe to print (text_safe) */
	check_printable(ev->name, "name");
	check_printable(ev->cat, "cat");
	if (ev->arg_name)
		check_printable(ev->arg_name, "args.name");
	fuzz_check(!ev->bad_time, "an event with a bad ts or dur handed out");
}

static void read_all(unsigned want, size_t size, struct pass *out)
{
	struct trace_reader *r;
	struct trace_item it;
	char msg[512];
	uint64_t items = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	out->hash = 14695981039346656037ull;
	ret = trace_reader__open(&r, path, want, msg, sizeof(msg));
	if (ret) {
		fuzz_check(ret < 0 && msg[0], "open failed (%d) without a message", ret);
		out->ret = ret;
		return;
	}
	while ((ret = trace_reader__next(r, &it)) > 0) {
		/* each item takes at least one byte of the (decompressed) input */
		fuzz_check(++items <= (uint64_t)size * 1100 + 16, "more items than input bytes");
		switch (it.type) {
		case TI_EVENT:
			fuzz_check(want & TR_EVENTS, "an event that was not asked for");
			check_event(&it.ev);
			out->events++;
			out->hash = mix(out->hash, it.ev.text, it.ev.len);
			break;
		case TI_SCHED:
			fuzz_check(want & TR_SCHED, "a sched line that was not asked for");
			fuzz_check(it.text && it.len <= TR_MAX_SCHED_LINE, "sched line of %zu bytes",
				   it.len);
			fuzz_check(!memchr(it.text, '\n', it.len), "sched line with a newline");
			out->sched++;
			break;
		case TI_METADATA:
			fuzz_check(want & TR_METADATA, "metadata that was not asked for");
			fuzz_check(it.text && it.len && it.len <= TR_MAX_VALUE, "metadata of %zu bytes",
				   it.len);
			out->meta++;
			break;
		default:
			fuzz_fail("item of type %d", it.type);
		}
	}
	if (ret < 0) {
		const char *e = trace_reader__error(r), *colon = strchr(e, ':');

		fuzz_check(!strncmp(e, path, strlen(path)) && colon && colon[1] >= '1' &&
				   colon[1] <= '9',
			   "error not 'FILE:LINE: what': %s", e);
	} else {
		fuzz_check(ret == 0, "next returned %d", ret);
		/* the end stays the end */
		fuzz_check(trace_reader__next(r, &it) == 0, "an item after the end");
		(void)trace_reader__truncated(r);
		(void)trace_reader__no_events(r);
	}
	out->ret = ret;
	trace_reader__close(r);
}

/* Exact reference for json_us_to_ns on plain decimals: whole part of at most 14 digits (three
 * years of microseconds), fraction of at most 12, summed in units of 1e-12 us and rounded half
 * away from zero to whole ns. */
static void check_us_to_ns(const uint8_t *data, size_t size)
{
	size_t i = 0, wd = 0, fd = 0, len;
	__int128 units = 0;
	int64_t got, want;
	bool neg = false;
	int ret;

	len = size < 40 ? size : 40;
	ret = json_us_to_ns((const char *)data, len, &got);
	if (i < len && data[i] == '-')
		neg = true, i++;
	for (; i < len && data[i] >= '0' && data[i] <= '9'; i++, wd++) {
		if (wd == 14)
			return;
		units = units * 10 + (data[i] - '0');
	}
	units *= 1000000000000ll;
	if (i < len && data[i] == '.') {
		__int128 frac = 0, scale = 1000000000000ll;

		for (i++; i < len && data[i] >= '0' && data[i] <= '9'; i++, fd++) {
			if (fd == 12)
				return;
			scale /= 10;
			frac = frac * 10 + (data[i] - '0');
		}
		if (fd == 0)
			return;
		units += frac * scale;
	}
	if (i != len || wd == 0)
		return;
	/* units are 1e-12 us = 1e-9 ns */
	want = (int64_t)((units + 500000000) / 1000000000);
	if (neg)
		want = -want;
	fuzz_check(ret == 0 && got == want, "json_us_to_ns(\"%.*s\") = %lld (ret %d), want %lld",
		   (int)len, data, (long long)got, ret, (long long)want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pass all, events;

	check_us_to_ns(data, size);
	if (ftruncate(memfd, 0) || pwrite(memfd, data, size, 0) != (ssize_t)size)
		fuzz_fail("cannot fill the memfd: %s", strerror(errno));
	read_all(TR_ALL, size, &all);
	read_all(TR_EVENTS, size, &events);
	if (!all.ret)
		fuzz_check(!events.ret && events.events == all.events && events.hash == all.hash,
			   "events only: %llu events (ret %d); everything: %llu events",
			   (unsigned long long)events.events, events.ret,
			   (unsigned long long)all.events);
	return 0;
}
