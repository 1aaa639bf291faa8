// SPDX-License-Identifier: MIT
#include "record/deadline.h"
#include "util/util.h"
#include "events.h"

#include <errno.h>
#include <string.h>
#include <time.h>

bool deadline__switch_phase(volatile uint32_t *phase, uint32_t from, uint32_t to)
{
	return __atomic_compare_exchange_n(phase, &from, to, false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}

static void *wait_deadline(void *arg)
{
	struct deadline *d = arg;
	struct timespec ts = { .tv_sec = d->at / 1000000000ull, .tv_nsec = d->at % 1000000000ull };
	uint64_t now;

	/* a cancellation point: deadline__stop ends the wait */
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	/* recording or paused: either ends here (the loop's own stop may have come first) */
	if (!deadline__switch_phase(d->phase, PHASE_RECORDING, PHASE_DETACHING) &&
	    !deadline__switch_phase(d->phase, PHASE_PAUSED, PHASE_DETACHING))
		return NULL;
	now = now_ns();
	__atomic_store_n(&d->ended, now, __ATOMIC_SEQ_CST);
	return NULL;
}

int deadline__start(struct deadline *d, volatile uint32_t *phase, uint64_t at)
{
	int err;

	memset(d, 0, sizeof(*d));
	d->at = at;
	d->phase = phase;
	err = pthread_create(&d->thread, NULL, wait_deadline, d);
	if (err)
		return -err;
	d->running = true;
	return 0;
}

uint64_t deadline__ended(const struct deadline *d)
{
	return __atomic_load_n(&d->ended, __ATOMIC_SEQ_CST);
}

void deadline__stop(struct deadline *d)
{
	if (!d->running)
		return;
	pthread_cancel(d->thread);
	pthread_join(d->thread, NULL);
	d->running = false;
}
