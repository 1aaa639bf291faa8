// SPDX-License-Identifier: MIT
/* Writer throughput: synthetic span records through tracer's own Chrome JSON writer, to a plain
 * file and to a .json.gz, on one core. Spans look like a pipeline's: 8 threads, each a sequence of
 * calls (a valid trace: slices on a thread never overlap), a few names, durations of
 * microseconds to milliseconds, one in 50 with arguments.
 *
 * Usage: writer_bench [-n EVENTS] [-z] FILE
 *   -z  compress (the writer compresses when FILE ends in .gz; -z only checks it does)
 * Prints "events N ns T events_per_s R bytes B". */
#include "events.h"
#include "trace/trace_writer.h"
#include "util/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static const char *const names[] = { "avcodec_send_packet", "avcodec_receive_frame",
					     "sws_scale_frame", "Wait on Input Queue",
					     "decode_frame", "resize" };
	static const char *const cats[] = { "decode", "decode", "operator", "queue", "decode",
					    "operator" };
	long n = 5000000;
	uint64_t t0, t, ts[8], end = 0;
	struct trace_writer *w;
	const char *path;
	struct stat st;
	int opt, fd, err;

	while ((opt = getopt(argc, argv, "n:z")) != -1) {
		if (opt == 'n') {
			n = atol(optarg);
		} else if (opt != 'z') {
			fprintf(stderr, "usage: writer_bench [-n EVENTS] [-z] FILE\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: writer_bench [-n EVENTS] [-z] FILE\n");
		return 2;
	}
	path = argv[optind];
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	t0 = now_ns();
	err = trace_writer__open(&w, path, fd, 0);
	if (err) {
		fprintf(stderr, "writer_bench: %s\n", strerror(-err));
		return 1;
	}
	trace_writer__process_name(w, 1000, "bench");
	for (int k = 0; k < 8; k++) {
		trace_writer__thread_name(w, 1000, 1000 + k, "worker");
		ts[k] = 1000000 + k * 100;
	}
	for (long i = 0; i < n; i++) {
		uint32_t k = (uint32_t)(i * 2654435761u) % 6;
		struct span_rec r = {
			.type = REC_SPAN,
			.probe_id = k,
			.pid = 1000,
			.tid = 1000 + (i & 7),
			.start_ns = ts[i & 7],
			.end_ns = ts[i & 7] + 1500 + (i * 7919) % 2000000,
		};

		ts[i & 7] = r.end_ns + 733;
		if (r.end_ns > end)
			end = r.end_ns;
		trace_writer__span(w, &r, names[k], cats[k], i % 50 ? NULL : "\"frame\":42");
	}
	err = trace_writer__close(w, end, "benchmark", "{}");
	t = now_ns() - t0;
	if (err || stat(path, &st)) {
		fprintf(stderr, "writer_bench: writing %s failed\n", path);
		return 1;
	}
	printf("events %ld ns %llu events_per_s %.0f bytes %lld\n", n, (unsigned long long)t,
	       n / (t / 1e9), (long long)st.st_size);
	return 0;
}
