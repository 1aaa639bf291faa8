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
	bool stopping;
	uint64_t now;

	pthread_mutex_lock(&d->lock);
	while (!d->stopping && pthread_cond_timedwait(&d->wake, &d->lock, &ts) != ETIMEDOUT)
		;
	stopping = d->stopping;
	pthread_mutex_unlock(&d->lock);
	if (stopping)
		return NULL;
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
	pthread_condattr_t attr;
	int err;

	memset(d, 0, sizeof(*d));
	d->at = at;
	d->phase = phase;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* `at` is CLOCK_MONOTONIC */
	pthread_cond_init(&d->wake, &attr);
	pthread_condattr_destroy(&attr);
	err = pthread_create(&d->thread, NULL, wait_deadline, d);
	if (err) {
		pthread_cond_destroy(&d->wake);
		pthread_mutex_destroy(&d->lock);
		return -err;
	}
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
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->lock);
	d->running = false;
}
