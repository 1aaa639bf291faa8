// SPDX-License-Identifier: MIT
/* Unit test of userspace/analyze/stages.c (folding, grouping, the verdict's rules) and of
 * userspace/analyze/report.c on generated traces: percentiles against the exact ones within the sketch's
 * stated error, and each thread's running / runnable / queue wait / blocked / idle time against
 * values worked out by hand, with nested and out-of-order spans, whatever the number of longest
 * spans kept (TRACER_REPORT_KEEP). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "analyze/report.h"
#include "analyze/stages.h"
#include "unit.h"

static char dir[] = "/tmp/test_stages.XXXXXX";

static const char *fold(const char *name)
{
	static char out[64];

	stage__fold(name, out, sizeof(out));
	return out;
}

static void test_fold(void)
{
	CHECK_STR(fold("decode-0"), "decode[*]");
	CHECK_STR(fold("decode-12"), "decode[*]");
	CHECK_STR(fold("worker 3"), "worker[*]");
	CHECK_STR(fold("op_12"), "op[*]");
	CHECK_STR(fold("Pipeline[0]"), "Pipeline[*]");
	CHECK_STR(fold("Ops (3)"), "Ops[*]");
	CHECK_STR(fold("pool-3-thread-2"), "pool-3-thread[*]");
	CHECK_STR(fold("queue:2"), "queue[*]");
	CHECK_STR(fold("pool.7"), "pool[*]");
	/* a version is not an index */
	CHECK_STR(fold("gst-launch-1.0"), "gst-launch-1.0");
	CHECK_STR(fold("python3.11"), "python3.11");
	/* no separator, no index, nothing before it: kept */
	CHECK_STR(fold("x264"), "x264");
	CHECK_STR(fold("reader"), "reader");
	CHECK_STR(fold("12"), "12");
	CHECK_STR(fold("-3"), "-3");
	CHECK_STR(fold("[0]"), "[0]");
	CHECK_STR(fold(""), "");
}

static void test_from_states(void)
{
	struct thread_time t = { 0 };

	/* queue time fits in sleeping: taken from it */
	thread_time__from_states(&t, 100, 20, 500, 80, 300);
	CHECK(t.running_ns == 100 && t.runnable_ns == 20 && t.queue_wait_ns == 300);
	CHECK(t.idle_ns == 200 && t.blocked_ns == 80 && t.has_states);
	CHECK(thread_time__wall(&t) == 700);
	/* more than sleeping: the rest from blocked */
	thread_time__from_states(&t, 0, 0, 100, 80, 150);
	CHECK(t.queue_wait_ns == 150 && t.idle_ns == 0 && t.blocked_ns == 30);
	/* more than both (runnable inside queue spans): capped */
	thread_time__from_states(&t, 10, 50, 100, 80, 400);
	CHECK(t.queue_wait_ns == 180 && t.idle_ns == 0 && t.blocked_ns == 0);
	CHECK(thread_time__wall(&t) == 240);
}

/* A thread with shares (in per mille of 1 s) of running, runnable, queue, blocked, idle. */
static struct thread_time tt(const char *name, int run, int rq, int q, int bl, int idle)
{
	return (struct thread_time){ .name = name,
				     .running_ns = run * 1000000ull,
				     .runnable_ns = rq * 1000000ull,
				     .queue_wait_ns = q * 1000000ull,
				     .blocked_ns = bl * 1000000ull,
				     .idle_ns = idle * 1000000ull,
				     .has_states = true };
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static const char *verdict(const struct thread_time *t, size_t n, int ncpus)
{
	static char buf[512];
	struct stage_stats *s;
	size_t ns;

	CHECK(stages__from_threads(t, n, &s, &ns) == 0);
	stages__verdict(buf, sizeof(buf), s, ns, ncpus);
	free(s);
	return buf;
}

static void test_grouping(void)
{
	struct thread_time t[] = {
		tt("op-1", 100, 0, 800, 0, 100), tt("decode-0", 900, 100, 0, 0, 0),
		tt("op-0", 300, 0, 600, 0, 100), tt("decode-1", 800, 100, 0, 0, 100),
		tt("writer", 10, 0, 990, 0, 0),
	};
	struct stage_stats *s;
	size_t n;

	t[0].spans = 3;
	t[2].spans = 4;
	t[2].cat_ns[CAT_OPERATOR] = 7;
	CHECK(stages__from_threads(t, 5, &s, &n) == 0);
	CHECK(n == 3);
	if (n != 3)
		return;
	/* busiest first */
	CHECK_STR(s[0].name, "decode[*]");
	CHECK_STR(s[1].name, "op[*]");
	CHECK_STR(s[2].name, "writer");
	CHECK(s[0].threads == 2 && s[0].wall_ns == 2000000000ull);
	CHECK(s[0].running_ns == 1700000000ull && s[0].max_wall_ns == 1000000000ull);
	CHECK(fabs(stage__share(&s[0], s[0].running_ns) - 0.85) < 1e-9);
	CHECK(s[1].spans == 7 && s[1].cat_ns[CAT_OPERATOR] == 7);
	CHECK(s[1].queue_wait_ns == 1400000000ull);
	free(s);
}

/* ffmpeg's five threads share its name; only one decodes, flat out: it is a stage of its own,
 * not averaged with four idle namesakes into "busy 29%". PyTorch's main process and its
 * DataLoader workers are all python3: a stage each. */
static void test_threads_told_apart(void)
{
	struct thread_time ff[] = {
		tt("ffmpeg", 990, 10, 0, 0, 0), tt("ffmpeg", 5, 0, 0, 0, 995),
		tt("ffmpeg", 3, 0, 0, 0, 997), tt("ffmpeg", 2, 0, 0, 0, 998),
		tt("ffmpeg", 1, 0, 0, 0, 999),
	};
	struct thread_time py[] = {
		tt("python3", 50, 0, 900, 0, 50), tt("python3", 950, 30, 0, 0, 20),
		tt("python3", 940, 40, 0, 0, 20),
	};
	struct stage_stats *s;
	size_t n;

	for (int i = 0; i < 5; i++) {
		ff[i].pid = 100;
		ff[i].tid = 100 + i;
	}
	CHECK(stages__from_threads(ff, 5, &s, &n) == 0);
	CHECK(n == 2 && !strcmp(s[0].name, "ffmpeg tid 100") && s[0].threads == 1);
	CHECK(n == 2 && !strcmp(s[1].name, "ffmpeg") && s[1].threads == 4);
	free(s);
	CHECK(starts(verdict(ff, 5, 2), "bottleneck: ffmpeg tid 100 — busy 100%"));
	py[0].pid = py[0].tid = 40;
	py[1].pid = py[1].tid = 41;
	py[2].pid = py[2].tid = 42;
	CHECK(stages__from_threads(py, 3, &s, &n) == 0);
	CHECK(n == 3 && starts(s[0].name, "python3 pid 4") && !strcmp(s[2].name, "python3 pid 40"));
	free(s);
	/* namesakes in one process that do different work are apart, by what they do */
	ff[0] = tt("worker", 400, 0, 0, 0, 600);
	ff[1] = tt("worker", 300, 0, 0, 0, 700);
	ff[2] = tt("worker", 350, 0, 0, 0, 650);
	ff[0].cat_ns[CAT_DECODE] = 9;
	ff[1].cat_ns[CAT_OPERATOR] = 9;
	ff[1].cat_ns[CAT_QUEUE] = 20; /* waiting is not its work */
	ff[2].cat_ns[CAT_DECODE] = 5;
	for (int i = 0; i < 3; i++)
		ff[i].pid = 7;
	CHECK(stages__from_threads(ff, 3, &s, &n) == 0);
	CHECK(n == 2 && !strcmp(s[0].name, "worker (decode)") && s[0].threads == 2);
	CHECK(n == 2 && !strcmp(s[1].name, "worker (operator)") && s[1].threads == 1);
	free(s);
	ff[0] = tt("ffmpeg", 990, 10, 0, 0, 0);
	ff[1] = tt("ffmpeg", 5, 0, 0, 0, 995);
	for (int i = 0; i < 2; i++) {
		ff[i].pid = 100;
		ff[i].tid = 100 + i;
	}
	/* replicas all saturated stay one stage */
	ff[1] = ff[0];
	ff[1].tid = 101;
	CHECK(stages__from_threads(ff, 2, &s, &n) == 0);
	CHECK(n == 1 && !strcmp(s[0].name, "ffmpeg") && s[0].threads == 2);
	free(s);
}

/* PyTorch's DataLoader: workers named by their role (their Python runs _worker_loop), the
 * main process waiting in Queue.get; a BLAS pool thread spinning in sched_yield (busy, no
 * spans) is not the bound while the traced work is saturated; a multiprocessing feeder thread
 * always waits and is never the evidence. */
static void test_dataloader(void)
{
	struct thread_time t[] = {
		tt("MainThread", 100, 50, 800, 0, 50), tt("MainThread", 950, 50, 0, 0, 0),
		tt("MainThread", 900, 80, 0, 0, 20),   tt("python3", 300, 700, 0, 0, 0),
		tt("QueueFeederThread", 5, 5, 990, 0, 0),
	};
	char names[5][STAGE_NAME_LEN];

	for (int i = 0; i < 5; i++)
		t[i].spans = i == 3 ? 0 : 10;
	t[0].pid = t[0].tid = 40;
	t[1].pid = t[1].tid = 41;
	t[2].pid = t[2].tid = 42;
	t[3].pid = 40, t[3].tid = 43;
	t[4].pid = 41, t[4].tid = 44;
	t[1].role = t[2].role = stage__python_role("_worker_loop");
	t[4].role = stage__python_role("Queue._feed");
	CHECK(stages__names(t, 5, names) == 0);
	CHECK_STR(names[0], "MainThread");
	CHECK_STR(names[1], "DataLoader worker pid 41");
	CHECK_STR(names[4], "queue feeder pid 41");
	CHECK(starts(verdict(t, 5, 2), "bottleneck: DataLoader worker pid 41 — busy 100% of wall "
				       "time (running 95%, runnable 5%); waiting on queues: MainThread "
				       "80%; the data loader bounds the model"));
	/* the workers idle, the model busy: the main process, not the spinning pool thread */
	t[0] = tt("MainThread", 900, 50, 0, 0, 50);
	t[1] = tt("MainThread", 100, 0, 900, 0, 0);
	t[2] = tt("MainThread", 100, 0, 900, 0, 0);
	t[0].spans = t[1].spans = t[2].spans = 10;
	t[0].pid = t[0].tid = 40;
	t[1].pid = t[1].tid = 41;
	t[2].pid = t[2].tid = 42;
	t[1].role = t[2].role = stage__python_role("_worker_loop");
	CHECK(starts(verdict(t, 5, 2), "bottleneck: MainThread — busy 95%"));
	/* without spans anywhere, the busiest thread is all there is */
	for (int i = 0; i < 5; i++)
		t[i].spans = 0;
	CHECK(starts(verdict(t, 5, 2), "bottleneck: python3 — busy 100%"));
	CHECK(stage__python_wait("Queue.get") && stage__python_wait("Condition.wait"));
	CHECK(!stage__python_wait("decode_batch") && !stage__python_role("main"));
}

/* A busy pool thread without spans, woken mostly by the thread that hands it work, joins that
 * thread's stage; one of another process, one woken by a thread without spans, or one that
 * mostly sleeps, does not. */
static void test_helpers_join(void)
{
	struct thread_time t[] = {
		tt("worker", 300, 0, 0, 0, 700),  tt("python3", 950, 0, 0, 0, 50),
		tt("python3", 940, 0, 0, 0, 60),  tt("reader", 50, 0, 900, 0, 50),
		tt("python3", 900, 0, 0, 0, 100), tt("idle", 0, 0, 0, 0, 1000),
		tt("python3", 900, 0, 0, 0, 100), tt("gst-launch", 5, 0, 0, 0, 995),
	};
	char names[8][STAGE_NAME_LEN];

	for (int i = 0; i < 8; i++)
		t[i].pid = 1, t[i].tid = 10 + i;
	t[0].spans = 5, t[3].spans = 5;
	t[1].woken_by = t[2].woken_by = 10; /* the worker's pool */
	t[4].woken_by = 10, t[4].pid = 2;   /* another process */
	t[6].woken_by = 15;		     /* a thread without spans */
	t[7].woken_by = 10;		     /* asleep: it does none of the work */
	CHECK(stages__names(t, 8, names) == 0);
	CHECK_STR(names[1], "worker");
	CHECK_STR(names[2], "worker");
	CHECK(strcmp(names[4], "worker") && strcmp(names[6], "idle") && strcmp(names[7], "worker"));
	CHECK(starts(verdict(t, 4, 2), "bottleneck: worker — busy 73%"));
	/* a saturated thread keeps its less busy helpers apart (it is the bound by itself), and
	 * takes the saturated ones */
	t[0] = tt("worker", 950, 0, 0, 0, 50);
	t[0].pid = 1, t[0].tid = 10, t[0].spans = 5;
	t[2] = tt("python3", 400, 0, 0, 0, 600);
	t[2].pid = 1, t[2].tid = 12, t[2].woken_by = 10;
	CHECK(stages__names(t, 8, names) == 0);
	CHECK_STR(names[1], "worker");
	CHECK(strcmp(names[2], "worker"));
}

/* ffmpeg decoding flat out with its default threads, by pid on a 2-CPU machine shared with
 * other work (measured: running, runnable, idle per mille; the first thread calls the decoder
 * and has the spans, the others are its frame and helper threads, all named ffmpeg). Recorded
 * again, its main thread's busy share came out anywhere from 59% to 78%: the grouping and the
 * verdict must not flip as it crosses SATURATED ("none", the thread averaged with its seven
 * namesakes into 19%, once; "ffmpeg tid N — busy 61%" the next time). */
static const int ff_runs[][8][3] = {
	{ { 205, 385, 410 }, { 82, 57, 861 }, { 58, 55, 887 }, { 56, 65, 879 },
	  { 0, 0, 1000 }, { 0, 0, 1000 }, { 70, 227, 703 }, { 73, 372, 555 } },
	{ { 215, 395, 390 }, { 82, 57, 861 }, { 58, 55, 887 }, { 56, 65, 879 },
	  { 0, 0, 1000 }, { 0, 0, 1000 }, { 70, 227, 703 }, { 73, 372, 555 } },
	{ { 263, 459, 278 }, { 107, 93, 800 }, { 79, 91, 830 }, { 76, 79, 845 },
	  { 0, 0, 1000 }, { 0, 0, 1000 }, { 91, 224, 685 }, { 93, 182, 725 } },
	/* paced (-re): the decoder waits for the clock, its threads for it */
	{ { 9, 201, 790 }, { 2, 5, 993 }, { 1, 34, 965 }, { 2, 15, 983 },
	  { 0, 0, 1000 }, { 0, 0, 1000 }, { 2, 31, 967 }, { 1, 27, 972 } },
	/* two busy loops beside it and a sanitized tracer: the frame threads wait for a CPU
	 * most of the time, and as a stage they are busier than the thread they work for */
	{ { 50, 400, 550 }, { 80, 600, 320 }, { 80, 600, 320 }, { 80, 600, 320 },
	  { 0, 0, 1000 }, { 0, 0, 1000 }, { 80, 600, 320 }, { 80, 600, 320 } },
};

static const char *ff_verdict(size_t run, char (*names)[STAGE_NAME_LEN])
{
	struct thread_time t[8];

	for (int i = 0; i < 8; i++) {
		t[i] = tt("ffmpeg", ff_runs[run][i][0], ff_runs[run][i][1], 0, 0,
			  ff_runs[run][i][2]);
		t[i].pid = 100, t[i].tid = 100 + i;
	}
	t[0].spans = 4000;
	t[6].woken_by = t[7].woken_by = 100; /* frame threads, fed by the caller */
	CHECK(stages__names(t, 8, names) == 0);
	return verdict(t, 8, 2);
}

static void test_ffmpeg_runs_agree(void)
{
	char names[8][STAGE_NAME_LEN], first[256];
	const char *v;

	for (size_t run = 0; run < 3; run++) {
		v = ff_verdict(run, names);
		CHECK_STR(names[0], "ffmpeg tid 100");
		for (int i = 1; i < 8; i++)
			CHECK_STR(names[i], "ffmpeg");
		CHECK(starts(v, "bottleneck: ffmpeg tid 100 — busy "));
		CHECK(strstr(v, "the 7 namesakes it hands work to (no spans of their own) busy "));
		if (!run)
			snprintf(first, sizeof(first), "%s", v);
	}
	/* its own share, as measured: not rounded up to make the rule */
	CHECK(starts(first, "bottleneck: ffmpeg tid 100 — busy 59% of wall time (running 21%, "
			    "runnable 39%); the 7 namesakes it hands work to (no spans of their own) "
			    "busy 1.1 CPUs"));
	/* loaded: still the thread the pool works for ("none" before: the pool, busier as a
	 * stage, was taken for the busiest, under SATURATED) */
	v = ff_verdict(4, names);
	CHECK(starts(v, "bottleneck: ffmpeg tid 100 — busy 45% "));
	/* paced, it waits: the same stages, and the pipeline is not bound */
	v = ff_verdict(3, names);
	CHECK_STR(names[0], "ffmpeg tid 100");
	CHECK(starts(v, "bottleneck: none — the busiest stage, ffmpeg tid 100, is busy 21%"));
}

static void test_verdicts(void)
{
	/* the sample pipeline, decode-bound: decoders busy, everyone else waits */
	struct thread_time dec[] = {
		tt("decode-0", 610, 380, 10, 0, 0), tt("decode-1", 625, 365, 10, 0, 0),
		tt("op-0", 120, 270, 610, 0, 0),    tt("op-1", 120, 250, 630, 0, 0),
		tt("reader", 80, 210, 700, 0, 10),  tt("writer", 40, 50, 900, 0, 10),
		tt("pipeline", 2, 0, 0, 0, 998),
	};
	/* six decoders on two CPUs */
	struct thread_time starved[] = {
		tt("decode-0", 110, 760, 130, 0, 0), tt("decode-1", 110, 760, 130, 0, 0),
		tt("decode-2", 110, 760, 130, 0, 0), tt("decode-3", 110, 760, 130, 0, 0),
		tt("decode-4", 110, 760, 130, 0, 0), tt("decode-5", 110, 760, 130, 0, 0),
		tt("op-0", 70, 570, 360, 0, 0),	     tt("op-1", 70, 570, 360, 0, 0),
	};
	/* decode-bound on a machine where another process takes a CPU: everyone waits for one,
	 * but the pipeline's own threads do not want many more CPUs than there are */
	struct thread_time loaded[] = {
		tt("decode-0", 417, 568, 15, 0, 0), tt("decode-1", 417, 568, 15, 0, 0),
		tt("op-0", 87, 582, 331, 0, 0),	    tt("op-1", 87, 582, 331, 0, 0),
		tt("writer", 32, 311, 657, 0, 0),   tt("reader", 60, 248, 692, 0, 0),
	};
	/* ffmpeg transcoding flat out with its default threads on a busy machine (measured): no
	 * thread saturated, ten threads wanting 1.9 of the 2 CPUs */
	struct thread_time ffmpeg[] = {
		tt("ffmpeg", 176, 317, 0, 0, 507), tt("ffmpeg", 70, 75, 0, 0, 855),
		tt("ffmpeg", 67, 52, 0, 0, 881),   tt("ffmpeg", 69, 56, 0, 0, 875),
		tt("ffmpeg", 0, 0, 0, 0, 1000),    tt("ffmpeg", 0, 0, 0, 0, 1000),
		tt("ffmpeg", 95, 272, 0, 0, 633),  tt("ffmpeg", 102, 397, 0, 0, 501),
		tt("ffmpeg", 30, 59, 0, 0, 911),   tt("ffmpeg", 32, 75, 0, 0, 893),
	};
	struct thread_time io[] = {
		tt("reader", 200, 50, 0, 700, 50),
		tt("decode-0", 100, 0, 850, 0, 50),
	};
	struct thread_time idle[] = {
		tt("reader", 200, 10, 0, 0, 790),
		tt("decode-0", 100, 0, 850, 0, 50),
	};
	const char *v;

	v = verdict(dec, 7, 2);
	CHECK(starts(v, "bottleneck: decode[*] — busy 99% of wall time (running 62%, "
			  "runnable 37%); waiting on queues: writer 90%, reader 70%, op[*] 62%"));
	v = verdict(starved, 8, 2);
	CHECK(starts(v, "bottleneck: CPU-starved — threads wait for a CPU 88% of their busy "
			  "time; 6.5 threads want a CPU, 2 CPUs (busiest: decode[*], runnable 76%, "
			  "running 11%)"));
	/* the same waits on a machine with 16 CPUs: other processes take them */
	v = verdict(starved, 8, 16);
	CHECK(starts(v, "bottleneck: decode[*] — busy 87%"));
	CHECK(strstr(v, "it waits for a CPU more than it runs"));
	v = verdict(loaded, 6, 2);
	CHECK(starts(v, "bottleneck: decode[*] — busy 99% of wall time (running 42%, runnable 57%)"));
	CHECK(strstr(v, "it waits for a CPU more than it runs (other processes?)"));
	/* not "none — the pipeline mostly waits": its threads take the CPUs */
	v = verdict(ffmpeg, 10, 2);
	CHECK(!strcmp(v, "bottleneck: CPU-bound — the pipeline's threads want 1.9 CPUs of 2 "
			 "(running 0.6, waiting for one 1.3; busiest: ffmpeg, busy 19%); they wait "
			 "for a CPU more than they run (other processes?)"));
	/* on 8 CPUs the same threads leave most of them free: they wait for each other */
	v = verdict(ffmpeg, 10, 8);
	CHECK(starts(v, "bottleneck: none — the busiest stage, ffmpeg, is busy 19%"));
	v = verdict(io, 2, 2);
	CHECK(starts(v, "bottleneck: I/O-bound — reader blocked in uninterruptible waits 70%"));
	v = verdict(idle, 2, 2);
	CHECK(!strcmp(v, "bottleneck: none — the busiest stage, reader, is busy 21% of wall "
			 "time; the pipeline mostly waits (waiting on queues: decode[*] 85%)"));
	v = verdict(NULL, 0, 2);
	CHECK(starts(v, "bottleneck: unknown"));

	/* without scheduler states: time inside spans */
	struct thread_time spans[] = {
		{ .name = "decode-0", .running_ns = 950, .idle_ns = 50 },
		{ .name = "op-0", .running_ns = 300, .queue_wait_ns = 700 },
	};
	v = verdict(spans, 2, 0);
	CHECK(!strcmp(v, "bottleneck: decode[*] — inside spans 95% of wall time (no scheduler "
			 "states in the trace); waiting on queues: op[*] 70%"));
	spans[0].cat_ns[CAT_IO] = 900;
	v = verdict(spans, 2, 0);
	CHECK(starts(v, "bottleneck: I/O-bound — decode[*] inside io spans 90%"));
}

static void test_print_width(void)
{
	struct thread_time t[] = { tt("a-very-long-thread-name-that-goes-on-0", 500, 100, 100, 100,
				      200),
				   tt("b", 1, 2, 3, 4, 990) };
	struct stage_stats *s;
	size_t n;
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	t[0].spans = 123456789;
	CHECK(stages__from_threads(t, 2, &s, &n) == 0);
	stages__print(f, s, n);
	fclose(f);
	CHECK(strstr(buf, "STAGE") && strstr(buf, "IN-QUEUE"));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		CHECK(strlen(line) <= 100);
	free(buf);
	free(s);
}

/* ---- report.c on generated traces ------------------------------------------------------ */

static const char *path_of(const char *name)
{
	static char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static uint64_t rng_state = 42;

static uint64_t rng(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return rng_state >> 11;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static const struct report_group *group(const struct report *r, const char *key)
{
	for (size_t i = 0; i < r->ngroups; i++)
		if (!strcmp(r->groups[i]->key, key))
			return r->groups[i];
	return NULL;
}

#define NSPANS 60000

static void test_percentiles_exact(void)
{
	static const char *const names[] = { "lognormal", "constant", "uniform" };
	static const double qs[] = { 0.5, 0.9, 0.95, 0.99, 0.999 };
	uint64_t *d[3], n[3] = { 0 }, total[3] = { 0 };
	FILE *f = fopen(path_of("p.json"), "w");
	struct report_opts o = { .path = path_of("p.json"), .by = BY_NAME, .top = 0 };
	struct report r;
	char err[256];
	uint64_t ts = 0;

	fprintf(f, "{\"traceEvents\":[\n");
	for (int k = 0; k < 3; k++)
		d[k] = calloc(NSPANS, sizeof(uint64_t));
	for (int i = 0; i < NSPANS; i++) {
		int k = rng() % 3;
		uint64_t v;

		if (k == 0) /* 1 us .. 100 ms, log-uniform */
			v = (uint64_t)(1000 * pow(1e5, (double)(rng() % 1000000) / 1e6));
		else if (k == 1)
			v = rng() % 100 ? 5000 : 5000 + rng() % 1000000;
		else
			v = rng() % 2000000;
		d[k][n[k]++] = v;
		total[k] += v;
		fprintf(f, "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"operator\",\"ts\":%llu.%03llu,"
			   "\"dur\":%llu.%03llu,\"pid\":1,\"tid\":%d},\n",
			names[k], (unsigned long long)ts / 1000, (unsigned long long)ts % 1000,
			(unsigned long long)v / 1000, (unsigned long long)v % 1000, 2 + i % 5);
		ts += v + 7;
	}
	fprintf(f, "{\"ph\":\"i\",\"name\":\"end\",\"ts\":%llu.000,\"pid\":1,\"tid\":1}\n]}\n",
		(unsigned long long)ts / 1000 + 1);
	fclose(f);
	CHECK(report__run(&r, &o, err, sizeof(err)) == 0);
	CHECK(r.spans == NSPANS && r.ngroups == 3);
	for (int k = 0; k < 3; k++) {
		const struct report_group *g = group(&r, names[k]);

		CHECK(g != NULL);
		if (!g)
			continue;
		qsort(d[k], n[k], sizeof(uint64_t), cmp_u64);
		CHECK(g->count == n[k] && g->total_ns == total[k]);
		CHECK(g->sketch.min == d[k][0] && g->sketch.max == d[k][n[k] - 1]);
		for (size_t q = 0; q < sizeof(qs) / sizeof(qs[0]); q++) {
			size_t rank = (size_t)ceil(qs[q] * n[k]);
			uint64_t exact = d[k][rank - 1], got = sketch__quantile(&g->sketch, qs[q]);

			CHECK(fabs((double)got - exact) <= SKETCH_REL_ERR * exact + 1);
		}
	}
	/* sorted by total */
	for (size_t i = 1; i < r.ngroups; i++)
		CHECK(r.groups[i - 1]->total_ns >= r.groups[i]->total_ns);
	report__free(&r);
	/* --min-dur leaves the short ones out */
	o.min_dur_ns = 1000000;
	CHECK(report__run(&r, &o, err, sizeof(err)) == 0);
	for (size_t i = 0; i < r.ngroups; i++)
		CHECK(r.groups[i]->sketch.min >= 1000000);
	report__free(&r);
	for (int k = 0; k < 3; k++)
		free(d[k]);
}

/* Thread 10 (op-0): runs until 100 us, sleeps, is woken at 300, runs at 350, blocks (D) at 500,
 * is woken at 600, runs at 620, sleeps from 800 to the end (1000). Queue spans: [50, 320]
 * holding [90, 200], [450, 550], [900, 950]; an operator span [600, 700]. Thread 11 (op-1)
 * never runs: asleep throughout. Thread 12 (decode-0) is born at 400, runs at 410, exits at
 * 700. Thread 99 is another process's. */
static const char *const spans_10[] = {
	/* in the order they end, as the recorder writes them */
	"{\"ph\":\"X\",\"name\":\"inner\",\"cat\":\"queue\",\"ts\":90.000,\"dur\":110.000,"
	"\"pid\":1,\"tid\":10}",
	"{\"ph\":\"X\",\"name\":\"pop\",\"cat\":\"queue\",\"ts\":50.000,\"dur\":270.000,\"pid\":1,"
	"\"tid\":10}",
	"{\"ph\":\"X\",\"name\":\"pop\",\"cat\":\"queue\",\"ts\":450.000,\"dur\":100.000,\"pid\":1,"
	"\"tid\":10}",
	"{\"ph\":\"X\",\"name\":\"work\",\"cat\":\"operator\",\"ts\":600.000,\"dur\":100.000,"
	"\"pid\":1,\"tid\":10}",
	"{\"ph\":\"X\",\"name\":\"pop\",\"cat\":\"queue\",\"ts\":900.000,\"dur\":50.000,\"pid\":1,"
	"\"tid\":10}",
};

static const char sched_text[] =
	"# tracer: nop\\n"
	"op-0-10 (1) [000] d..2 0.000100000: sched_switch: prev_comm=op-0 prev_pid=10 prev_prio=1 "
	"prev_state=S ==> next_comm=x next_pid=99 next_prio=1\\n"
	"x-99 (50) [000] d..2 0.000300000: sched_waking: comm=op-0 pid=10 prio=1 target_cpu=000\\n"
	"x-99 (50) [000] d..2 0.000350000: sched_switch: prev_comm=x prev_pid=99 prev_prio=1 "
	"prev_state=R+ ==> next_comm=op-0 next_pid=10 next_prio=1\\n"
	"x-99 (50) [001] d..2 0.000400000: sched_wakeup_new: comm=decode-0 pid=12 prio=1 "
	"target_cpu=001\\n"
	"x-99 (50) [001] d..2 0.000410000: sched_switch: prev_comm=x prev_pid=99 prev_prio=1 "
	"prev_state=R ==> next_comm=decode-0 next_pid=12 next_prio=1\\n"
	"op-0-10 (1) [000] d..2 0.000500000: sched_switch: prev_comm=op-0 prev_pid=10 prev_prio=1 "
	"prev_state=D ==> next_comm=x next_pid=99 next_prio=1\\n"
	"x-99 (50) [000] d..2 0.000600000: sched_waking: comm=op-0 pid=10 prio=1 target_cpu=000\\n"
	"x-99 (50) [000] d..2 0.000620000: sched_switch: prev_comm=x prev_pid=99 prev_prio=1 "
	"prev_state=S ==> next_comm=op-0 next_pid=10 next_prio=1\\n"
	"decode-0-12 (1) [001] d..2 0.000700000: sched_switch: prev_comm=decode-0 prev_pid=12 "
	"prev_prio=1 prev_state=X ==> next_comm=x next_pid=99 next_prio=1\\n"
	"op-0-10 (1) [000] d..2 0.000800000: sched_switch: prev_comm=op-0 prev_pid=10 prev_prio=1 "
	"prev_state=S ==> next_comm=x next_pid=99 next_prio=1\\n";

static void write_sweep_trace(const char *name, const int *order, bool sched)
{
	FILE *f = fopen(path_of(name), "w");

	fprintf(f, "{\"traceEvents\":[\n");
	fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":10,\"args\":{\"name\":"
		   "\"op-0\"}},\n");
	fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":11,\"args\":{\"name\":"
		   "\"op-1\"}},\n");
	fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":12,\"args\":{\"name\":"
		   "\"decode-0\"}},\n");
	for (int i = 0; i < 5; i++)
		fprintf(f, "%s,\n", spans_10[order[i]]);
	fprintf(f, "{\"ph\":\"i\",\"s\":\"g\",\"name\":\"recording stopped\",\"pid\":0,\"tid\":0,"
		   "\"ts\":1000.000}\n],\n");
	if (sched)
		fprintf(f, "\"systemTraceEvents\":\"%s\",\n", sched_text);
	fprintf(f, "\"metadata\":{\"t0_monotonic_ns\":5000000,\"duration_ns\":1000000}}\n");
	fclose(f);
}

static const struct thread_time *find_tid(const struct report *r, int tid)
{
	for (size_t i = 0; i < r->nthreads; i++)
		if (r->threads[i].tid == tid)
			return &r->threads[i];
	return NULL;
}

static void check_sweep(const char *file, bool sched)
{
	static const char *const keeps[] = { NULL, "1", "2", "3" };
	struct report_opts o = { .path = path_of(file), .by = BY_STAGE, .top = 0 };
	struct report r;
	char err[256];

	for (size_t k = 0; k < sizeof(keeps) / sizeof(keeps[0]); k++) {
		const struct thread_time *t;

		if (keeps[k])
			setenv("TRACER_REPORT_KEEP", keeps[k], 1);
		else
			unsetenv("TRACER_REPORT_KEEP");
		CHECK(report__run(&r, &o, err, sizeof(err)) == 0);
		CHECK(r.nthreads == 3 && r.start_ns == 0 && r.end_ns == 1000000);
		t = find_tid(&r, 10);
		CHECK(t != NULL);
		if (t && sched) {
			CHECK(t->running_ns == 430000 && t->runnable_ns == 70000);
			CHECK(t->queue_wait_ns == 300000 && t->blocked_ns == 50000);
			CHECK(t->idle_ns == 150000 && t->has_states);
		} else if (t) {
			CHECK(t->running_ns == 100000 && t->queue_wait_ns == 420000);
			/* seen from its first span (50) to its last (950) */
			CHECK(t->idle_ns == 380000 && !t->has_states);
		}
		if (t) {
			CHECK(t->cat_ns[CAT_QUEUE] == 420000 && t->cat_ns[CAT_OPERATOR] == 100000);
			CHECK(t->spans == 5);
		}
		t = find_tid(&r, 11); /* asleep throughout, or never seen without states */
		CHECK(t && t->idle_ns == (sched ? 1000000 : 0));
		CHECK(t && thread_time__wall(t) == (sched ? 1000000 : 0));
		t = find_tid(&r, 12);
		if (sched)
			CHECK(t && t->runnable_ns == 10000 && t->running_ns == 290000 &&
			      thread_time__wall(t) == 300000);
		CHECK(!find_tid(&r, 99));
		CHECK(r.nstages == 2 && r.has_sched == sched && r.approx == 0);
		/* --by stage: the operator thread's spans under op[*] */
		CHECK(r.ngroups == 1 && !strcmp(r.groups[0]->key, "op[*]") &&
		      r.groups[0]->count == 5);
		report__free(&r);
	}
	unsetenv("TRACER_REPORT_KEEP");
}

static void test_sweep_exact(void)
{
	static const int end_order[] = { 0, 1, 2, 3, 4 }, shuffled[] = { 3, 0, 4, 2, 1 },
			 start_order[] = { 1, 0, 2, 3, 4 };

	write_sweep_trace("s1.json", end_order, true);
	check_sweep("s1.json", true);
	write_sweep_trace("s2.json", start_order, true);
	check_sweep("s2.json", true);
	write_sweep_trace("s3.json", shuffled, true);
	check_sweep("s3.json", true);
	write_sweep_trace("s4.json", end_order, false);
	check_sweep("s4.json", false);
}

static void test_report_errors(void)
{
	struct report_opts o = { .path = path_of("missing.json") };
	struct report r;
	char err[256];
	FILE *f;

	CHECK(report__run(&r, &o, err, sizeof(err)) < 0);
	CHECK(strstr(err, "cannot open") && strstr(err, "missing.json"));
	report__free(&r);
	f = fopen(path_of("notrace.json"), "w");
	fputs("{\"hello\":[1,2]}", f);
	fclose(f);
	o.path = path_of("notrace.json");
	CHECK(report__run(&r, &o, err, sizeof(err)) < 0);
	CHECK(strstr(err, "no \"traceEvents\""));
	report__free(&r);
}

int main(void)
{
	char cmd[600];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_fold);
	RUN(test_from_states);
	RUN(test_grouping);
	RUN(test_helpers_join);
	RUN(test_ffmpeg_runs_agree);
	RUN(test_threads_told_apart);
	RUN(test_dataloader);
	RUN(test_verdicts);
	RUN(test_print_width);
	RUN(test_percentiles_exact);
	RUN(test_sweep_exact);
	RUN(test_report_errors);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	UNIT_EXIT();
}
