/* SPDX-License-Identifier: MIT */
/* --max-overhead: a budget for what the probes cost the targets. Every half second the cost
 * of each probed function is estimated from its hits since the last check and what one hit of
 * its kind of site costs (overhead.h: the calibrated trap plus the programs' run time); over
 * the budget for a second, the functions that cost most stop being probed, until the rest fit
 * in the budget (a cost under 1% of a CPU is always within it). The recording goes on with the others; the status line, the summary, the
 * trace (an instant, and the metadata) say which functions went and when. */
#ifndef TRACER_BUDGET_H
#define TRACER_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BUDGET_DEFAULT_PCT 20.0 /* above what the default packs cost on the guides' pipelines (bench row 8: 3-11%) */

struct recording;
struct cJSON;

struct budget {
	double max; /* share of the targets' CPU time; 0: no budget */
	uint64_t last_ns, last_cpu;
	uint64_t *last_calls; /* calls recorded per probe id at the last check */
	bool *shed;	      /* by probe id: no longer probed */
	int8_t *cls;	      /* by probe id: enum insn_class of its site, -1 not read yet */
	size_t n;	      /* size of both */
	int over;	      /* checks in a row over the budget */
	size_t nshed;
	uint64_t shed_ns;  /* when the first were shed */
	double shed_share; /* the share then */
	uint64_t relink_ns; /* making links again without them (the old ones stand meanwhile:
			     * nothing is missed) */
};

void budget__init(struct budget *b, double max_pct);
/* Call every half second while recording. */
void budget__check(struct recording *r, uint64_t now);
/* "budget: ..." after the summary, when probes were shed. */
void budget__print(const struct recording *r, FILE *f);
/* "shed": {...} in the metadata, when probes were shed. */
void budget__add_json(const struct recording *r, struct cJSON *meta);
void budget__free(struct budget *b);

#endif
