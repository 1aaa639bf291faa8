/* SPDX-License-Identifier: MIT */
#ifndef TRACER_RECORD_EXPEDITE_H
#define TRACER_RECORD_EXPEDITE_H

#include <stdbool.h>

/* /sys/kernel/rcu_expedited set to 1 for a while, then back to what it was. Closing a
 * perf-event uprobe waits for grace periods one close after another (expedite.c); expedited
 * ones are far shorter. Nothing changes when it is 1 already or cannot be written. */
struct expedite {
	bool set; /* we wrote 1, and must write 0 back */
};

void expedite__begin(struct expedite *x, const char *why);
void expedite__end(struct expedite *x);

#endif
