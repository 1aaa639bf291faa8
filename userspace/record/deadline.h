/* SPDX-License-Identifier: MIT */
#ifndef TRACER_RECORD_DEADLINE_H
#define TRACER_RECORD_DEADLINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* -d's end, kept by a thread of its own: the event loop can be held up for seconds by the
 * work it does for the targets (probing a followed child or a library it loaded, shedding
 * probes, a full pipe on -o -), and the recording must still end on time. At the deadline the
 * thread switches the BPF programs to PHASE_DETACHING (nothing more is recorded) and notes
 * when; the loop stops when it next looks. */
struct deadline {
	pthread_t thread;
	bool running;
	/* deadline__stop wakes the thread through these: no pthread_cancel, whose unwinding
	 * leaves AddressSanitizer's poison on the thread's stack (google/sanitizers#1399) */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;		/* under lock */
	uint64_t at;		/* CLOCK_MONOTONIC ns */
	volatile uint32_t *phase; /* the BPF programs' (enum record_phase) */
	uint64_t ended;		/* when the thread ended the recording; 0: it has not (atomic) */
};

/* Starts the thread: the recording ends at `at` (CLOCK_MONOTONIC ns). 0, or -errno. */
int deadline__start(struct deadline *d, volatile uint32_t *phase, uint64_t at);
/* When the thread ended the recording, or 0 if it has not. */
uint64_t deadline__ended(const struct deadline *d);
/* The thread gone (it ends nothing after this); safe to call twice, or never started. */
void deadline__stop(struct deadline *d);
/* The phase switched from `from` to `to` unless the deadline ended the recording first. */
bool deadline__switch_phase(volatile uint32_t *phase, uint32_t from, uint32_t to);

#endif
