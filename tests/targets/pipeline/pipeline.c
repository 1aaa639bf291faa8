// SPDX-License-Identifier: MIT
/*
 * pipeline: a synthetic multi-threaded media pipeline, the sample program of the README demo and
 * the ground-truth target of the integration tests.
 *
 *   reader -> q_packets -> decode-0..D-1 -> q_frames -> op-0..O-1 -> q_out -> writer
 *
 * Every stage busy-spins on CLOCK_MONOTONIC for a configured number of microseconds, so the
 * duration of each probed function is known. With --log the program writes, at exit, one line
 * per call of every probed function (its own measurement of what a tracer should record).
 * This file runs it; options.c reads its command line, call_log.c keeps and writes its log.
 * See tests/targets/README.md and --help.
 *
 * Build (no -fcf-protection: every probed function must start with `push %rbp`):
 *   gcc -O2 -g -fno-omit-frame-pointer -Wall -Wextra -pthread tests/targets/pipeline/[a-z]*.c \
 *       -o pipeline
 */
#define _GNU_SOURCE
#include "pipeline.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/*
 * Probed functions: external, never inlined, never cloned (.constprop/.isra/.part), never folded
 * together by identical-code folding (noipa), kept even if unused. Should the file be built with
 * -fcf-protection anyway, nocf_check keeps `endbr64` out of their entry so that the first
 * instruction is still `push %rbp` (they are only ever called directly).
 */
#if defined(__CET__) && (__CET__ & 1)
#define PROBED_NOCF __attribute__((nocf_check))
#else
#define PROBED_NOCF
#endif
#if defined(__clang__)
#define PROBED __attribute__((noinline, used)) PROBED_NOCF
#else
#define PROBED __attribute__((noinline, noipa, used)) PROBED_NOCF
#endif

#define LOG_INITIAL_MAX 65536	/* initial per-thread allocation is at most this many records */

/* ------------------------------------------------------------------------------------------ */
/* Data                                                                                       */

struct frame {
	int index;	   /* 0-based frame number, in read order (first field: easy to read in a probe) */
	int size;	   /* packet size in bytes, as returned by read_packet */
	int decoder;	   /* K of the decode-K thread that decoded it */
	int op_thread;	   /* K of the op-K thread that ran its operators */
	uint64_t checksum; /* mixed by every stage so that no work can be optimised away */
};

struct queue {
	pthread_mutex_t mu;
	pthread_cond_t not_empty;
	pthread_cond_t not_full;
	void **slots;
	unsigned cap, head, len;
	const char *name;
};

static struct queue q_packets, q_frames, q_out;
static char end_marker_obj;
#define END_MARKER ((void *)&end_marker_obj)

static atomic_int decoders_live, operators_live;
static volatile sig_atomic_t stop_signal; /* SIGINT/SIGTERM number, 0 while running */

/* ------------------------------------------------------------------------------------------ */
/* Time and work                                                                              */

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Busy-spins (no sleeping) until `start + us` microseconds; returns a value mixed from `seed`. */
static uint64_t spin_from(uint64_t start_ns, long us, uint64_t seed)
{
	uint64_t deadline = start_ns + (uint64_t)us * 1000ull;
	uint64_t x = seed | 1;

	do {
		for (int i = 0; i < 16; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	} while (now_ns() < deadline);
	return x;
}

/* ------------------------------------------------------------------------------------------ */
/* Probed functions. START is the first statement, END the last before return.                */

PROBED void queue_push(struct queue *q, void *item);
PROBED void *queue_pop(struct queue *q);
PROBED int read_packet(int index);
PROBED int decode_frame(struct frame *f);
PROBED int op_resize(struct frame *f);
PROBED int op_normalize(struct frame *f);
PROBED int op_infer(struct frame *f);
PROBED int run_operator(const char *name, struct frame *f);
PROBED int write_frame(struct frame *f);

/* Blocks while the queue is full. */
PROBED void queue_push(struct queue *q, void *item)
{
	uint64_t t0 = now_ns();

	pthread_mutex_lock(&q->mu);
	while (q->len == q->cap)
		pthread_cond_wait(&q->not_full, &q->mu);
	q->slots[(q->head + q->len) % q->cap] = item;
	q->len++;
	pthread_cond_signal(&q->not_empty);
	pthread_mutex_unlock(&q->mu);
	log_call(FN_QUEUE_PUSH, t0, now_ns(), 0);
}

/* Blocks while the queue is empty: that is the "wait on input queue" time. */
PROBED void *queue_pop(struct queue *q)
{
	uint64_t t0 = now_ns();
	void *item;

	pthread_mutex_lock(&q->mu);
	while (q->len == 0)
		pthread_cond_wait(&q->not_empty, &q->mu);
	item = q->slots[q->head];
	q->head = (q->head + 1) % q->cap;
	q->len--;
	pthread_cond_signal(&q->not_full);
	pthread_mutex_unlock(&q->mu);
	log_call(FN_QUEUE_POP, t0, now_ns(), 0);
	return item;
}

/* Returns the packet size in bytes: 1024 + 64 * (index % 16). */
PROBED int read_packet(int index)
{
	uint64_t t0 = now_ns();
	uint64_t x = spin_from(t0, cfg.read_us, (uint64_t)index);
	int size = 1024 + 64 * (index & 15);

	__asm__ volatile("" : : "r"(x)); /* keeps the spin's result alive */
	log_call(FN_READ_PACKET, t0, now_ns(), 0);
	return size;
}

/* Returns the frame index. */
PROBED int decode_frame(struct frame *f)
{
	uint64_t t0 = now_ns();

	f->checksum ^= spin_from(t0, cfg.decode_us, f->checksum + (uint64_t)f->size);
	log_call(FN_DECODE_FRAME, t0, now_ns(), 0);
	return f->index;
}

/* The three operators; each returns the frame index. */
PROBED int op_resize(struct frame *f)
{
	uint64_t t0 = now_ns();

	f->checksum += spin_from(t0, cfg.op_us, f->checksum ^ 0x7265u);
	log_call(FN_OP_RESIZE, t0, now_ns(), 0);
	return f->index;
}

PROBED int op_normalize(struct frame *f)
{
	uint64_t t0 = now_ns();

	f->checksum ^= spin_from(t0, cfg.op_us, f->checksum + 0x6e6f726du);
	log_call(FN_OP_NORMALIZE, t0, now_ns(), 0);
	return f->index;
}

PROBED int op_infer(struct frame *f)
{
	uint64_t t0 = now_ns();

	f->checksum = (f->checksum << 7 | f->checksum >> 57) +
		      spin_from(t0, cfg.op_us, f->checksum * 3u + 0x696e66u);
	log_call(FN_OP_INFER, t0, now_ns(), 0);
	return f->index;
}

/* Dispatcher: runs the operator called `name`; returns its result, -1 for an unknown name. */
PROBED int run_operator(const char *name, struct frame *f)
{
	uint64_t t0 = now_ns();
	int op = -1, ret = -1;

	if (strcmp(name, "resize") == 0) {
		op = 0;
		ret = op_resize(f);
	} else if (strcmp(name, "normalize") == 0) {
		op = 1;
		ret = op_normalize(f);
	} else if (strcmp(name, "infer") == 0) {
		op = 2;
		ret = op_infer(f);
	}
	log_call(FN_RUN_OPERATOR, t0, now_ns(), op);
	return ret;
}

/* Returns the frame index. */
PROBED int write_frame(struct frame *f)
{
	uint64_t t0 = now_ns();

	f->checksum ^= spin_from(t0, cfg.write_us, f->checksum + (uint64_t)f->index);
	__asm__ volatile("" : : "r"(f->checksum) : "memory");
	log_call(FN_WRITE_FRAME, t0, now_ns(), 0);
	return f->index;
}

/* ------------------------------------------------------------------------------------------ */
/* Threads                                                                                    */

enum role { ROLE_READER, ROLE_DECODER, ROLE_OPERATOR, ROLE_WRITER };

struct worker {
	pthread_t th;
	enum role role;
	int idx;
	uint64_t frames; /* frames this thread handled */
	struct tlog log;
};

static void fatal(const char *what, int err)
{
	fprintf(stderr, "pipeline: %s: %s\n", what, strerror(err));
	exit(1);
}

static void queue_init(struct queue *q, const char *name, unsigned cap)
{
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->not_empty, NULL);
	pthread_cond_init(&q->not_full, NULL);
	q->slots = calloc(cap, sizeof(*q->slots));
	if (!q->slots)
		fatal("calloc", ENOMEM);
	q->cap = cap;
	q->head = q->len = 0;
	q->name = name;
}

/* Names the thread and sets up its log, before it calls any probed function. */
static void worker_begin(struct worker *w)
{
	w->log.tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), w->log.name);
	if (cfg.log_path)
		tl_log = &w->log;
}

static void *reader_main(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	for (long i = 0; cfg.forever || i < cfg.frames; i++) {
		if (stop_signal)
			break;
		struct frame *f = calloc(1, sizeof(*f));
		if (!f)
			fatal("calloc", ENOMEM);
		f->index = (int)(i & INT_MAX);
		f->decoder = f->op_thread = -1;
		f->size = read_packet(f->index);
		f->checksum = (uint64_t)f->size * 0x9e3779b97f4a7c15ull;
		queue_push(&q_packets, f);
		w->frames++;
	}
	for (int k = 0; k < cfg.decoders; k++)
		queue_push(&q_packets, END_MARKER);
	return NULL;
}

static void *decoder_main(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	for (;;) {
		void *item = queue_pop(&q_packets);
		if (item == END_MARKER)
			break;
		struct frame *f = item;
		f->decoder = w->idx;
		decode_frame(f);
		queue_push(&q_frames, f);
		w->frames++;
	}
	/* The last decoder out ends the operators: its markers queue behind every frame. */
	if (atomic_fetch_sub(&decoders_live, 1) == 1)
		for (int k = 0; k < cfg.operators; k++)
			queue_push(&q_frames, END_MARKER);
	return NULL;
}

static void *operator_main(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	for (;;) {
		void *item = queue_pop(&q_frames);
		if (item == END_MARKER)
			break;
		struct frame *f = item;
		f->op_thread = w->idx;
		for (int k = 0; k < N_OPS; k++)
			run_operator(op_names[k], f);
		queue_push(&q_out, f);
		w->frames++;
	}
	if (atomic_fetch_sub(&operators_live, 1) == 1)
		queue_push(&q_out, END_MARKER);
	return NULL;
}

static void *writer_main(void *arg)
{
	struct worker *w = arg;

	worker_begin(w);
	for (;;) {
		void *item = queue_pop(&q_out);
		if (item == END_MARKER)
			break;
		write_frame(item);
		free(item);
		w->frames++;
	}
	return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Main                                                                                       */

static void on_stop_signal(int sig)
{
	if (!stop_signal)
		stop_signal = sig;
}

/* Upper bound of the records a thread makes in a bounded run (see the counts in README.md). */
static size_t log_estimate(enum role role)
{
	size_t n = (size_t)cfg.frames;

	if (cfg.forever)
		return 4096;
	switch (role) {
	case ROLE_READER:
		return 2 * n + (size_t)cfg.decoders;
	case ROLE_DECODER:
		return 3 * n + 1 + (size_t)cfg.operators;
	case ROLE_OPERATOR:
		return (2 + 2 * N_OPS) * n + 2;
	case ROLE_WRITER:
	default:
		return 2 * n + 1;
	}
}

int main(int argc, char **argv)
{
	FILE *log = NULL;
	sigset_t usr1, stops;
	int err;

	parse_args(argc, argv);

	if (cfg.log_path) {
		log = fopen(cfg.log_path, "w");
		if (!log) {
			fprintf(stderr, "pipeline: cannot open log '%s': %s\n", cfg.log_path,
				strerror(errno));
			return 1;
		}
	}

	/* SIGINT/SIGTERM: stop reading, drain, write the log, exit 0 (no SA_RESTART, so that a
	 * start delay is cut short). SIGUSR1 stays blocked in every thread: it is only the start
	 * trigger of --wait-signal, and a stray one must not kill the program. */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);

	if (cfg.wait_signal) {
		sigset_t waitset = usr1;
		int sig = 0;

		sigaddset(&waitset, SIGINT);
		sigaddset(&waitset, SIGTERM);
		pthread_sigmask(SIG_BLOCK, &waitset, NULL);
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		while (sigwait(&waitset, &sig) != 0)
			;
		if (sig != SIGUSR1)
			stop_signal = sig;
		pthread_sigmask(SIG_UNBLOCK, &stops, NULL);
	} else if (cfg.start_delay_ms >= 0) {
		struct timespec ts = {cfg.start_delay_ms / 1000, (cfg.start_delay_ms % 1000) * 1000000L};

		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop_signal)
			;
	}

	int nw = 2 + cfg.decoders + cfg.operators;
	struct worker *ws = calloc((size_t)nw, sizeof(*ws));
	if (!ws)
		fatal("calloc", ENOMEM);
	for (int i = 0; i < nw; i++) {
		struct worker *w = &ws[i];

		if (i == 0) {
			w->role = ROLE_READER;
			snprintf(w->log.name, sizeof(w->log.name), "reader");
		} else if (i <= cfg.decoders) {
			w->role = ROLE_DECODER;
			w->idx = i - 1;
			snprintf(w->log.name, sizeof(w->log.name), "decode-%u", (unsigned char)w->idx);
		} else if (i < nw - 1) {
			w->role = ROLE_OPERATOR;
			w->idx = i - 1 - cfg.decoders;
			snprintf(w->log.name, sizeof(w->log.name), "op-%u", (unsigned char)w->idx);
		} else {
			w->role = ROLE_WRITER;
			snprintf(w->log.name, sizeof(w->log.name), "writer");
		}
		w->log.max = cfg.forever ? LOG_MAX_FOREVER : SIZE_MAX / sizeof(struct rec);
		if (log) {
			size_t est = log_estimate(w->role);

			w->log.cap = est < LOG_INITIAL_MAX ? est : LOG_INITIAL_MAX;
			w->log.recs = malloc(w->log.cap * sizeof(struct rec));
			if (!w->log.recs)
				fatal("malloc", ENOMEM);
		}
	}

	uint64_t written = 0;
	uint64_t t_start = now_ns();
	bool started = !stop_signal;

	if (started) {
		queue_init(&q_packets, "q_packets", (unsigned)cfg.queue_cap);
		queue_init(&q_frames, "q_frames", (unsigned)cfg.queue_cap);
		queue_init(&q_out, "q_out", (unsigned)cfg.queue_cap);
		atomic_store(&decoders_live, cfg.decoders);
		atomic_store(&operators_live, cfg.operators);

		/* Downstream first, so that consumers are already waiting when the reader starts. */
		for (int i = nw - 1; i >= 0; i--) {
			static void *(*const mains[])(void *) = {
				[ROLE_READER] = reader_main,
				[ROLE_DECODER] = decoder_main,
				[ROLE_OPERATOR] = operator_main,
				[ROLE_WRITER] = writer_main,
			};
			err = pthread_create(&ws[i].th, NULL, mains[ws[i].role], &ws[i]);
			if (err)
				fatal("pthread_create", err);
		}
		for (int i = 0; i < nw; i++) {
			err = pthread_join(ws[i].th, NULL);
			if (err)
				fatal("pthread_join", err);
		}
		written = ws[nw - 1].frames;
	}
	double secs = (double)(now_ns() - t_start) / 1e9;

	if (log) {
		/* Threads that never ran are left out of the header. */
		struct tlog **logs = calloc((size_t)nw, sizeof(*logs));

		for (int i = 0; logs && i < nw; i++)
			logs[i] = &ws[i].log;
		if (!logs || write_log(log, logs, started ? nw : 0, written) != 0 ||
		    fclose(log) != 0) {
			fprintf(stderr, "pipeline: writing log '%s' failed\n", cfg.log_path);
			return 1;
		}
		free(logs);
	}
	if (stop_signal)
		fprintf(stderr, "pipeline: %s: %llu frames written in %.3f s\n",
			stop_signal == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)written, secs);
	else
		fprintf(stderr, "pipeline: %llu frames written in %.3f s\n", (unsigned long long)written,
			secs);

	for (int i = 0; i < nw; i++)
		free(ws[i].log.recs);
	free(ws);
	return 0;
}
