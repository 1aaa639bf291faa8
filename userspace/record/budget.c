// SPDX-License-Identifier: MIT
#include "record/budget.h"
#include "elf/demangle.h"
#include "record/recording.h"
#include "trace/json_text.h"
#include "util/util.h"
#include "tracer.skel.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CPU_NS (5 * 1000000ull) /* a target this idle in a check is not judged */
#define MIN_COST_SHARE 0.01 /* of one CPU */
#define NAMES_SHOWN 3

/* What the kernel costs per hit when calibration failed: bench/results.md, rows 1b. */
static const double default_entry_ns[INSN_CLASS_MAX] = { 700, 500, 10000 };
#define DEFAULT_RETURN_NS 500.0
#define DEFAULT_BPF_NS 300.0

void budget__init(struct budget *b, double max_pct)
{
	memset(b, 0, sizeof(*b));
	b->max = max_pct / 100;
}

static void grow(struct budget *b, size_t n)
{
	if (n <= b->n)
		return;
	b->last_calls = xrealloc(b->last_calls, n, sizeof(*b->last_calls));
	b->shed = xrealloc(b->shed, n, sizeof(*b->shed));
	b->cls = xrealloc(b->cls, n, sizeof(*b->cls));
	memset(b->cls + b->n, -1, (n - b->n) * sizeof(*b->cls));
	memset(b->last_calls + b->n, 0, (n - b->n) * sizeof(*b->last_calls));
	memset(b->shed + b->n, 0, (n - b->n) * sizeof(*b->shed));
	b->n = n;
}

/* Mean run time of one of tracer's programs per run, from the statistics windows so far,
 * less what the statistics add to it. */
static double prog_ns(const struct overhead *o, int fd)
{
	uint64_t runs = 0, ns = 0;

	if (overhead__prog_stats(fd, &runs, &ns) || !runs)
		return DEFAULT_BPF_NS / 2;
	return overhead__own_ns(o, (double)ns / runs, 1);
}

/* One call of probe id: its entry trap, its return trap, both programs (prog: the span
 * programs' means, by enum span_prog). */
static double hit_ns(struct recording *r, uint32_t id, const double prog[SPAN_PROGS])
{
	const struct overhead *o = &r->overhead;
	struct budget *b = &r->budget;
	enum insn_class c;

	if (b->cls[id] < 0) /* read once: the file's bytes at the site */
		b->cls[id] = recording__probe_class(r, &r->tracked.probes.v[id]);
	c = b->cls[id];
	const struct probe *p = &r->tracked.probes.v[id];
	bool ret = !(p->cfg.flags & PROBE_ENTRY_ONLY);
	double trap = o->cal.ok ? o->cal.entry_ns[c] : default_entry_ns[c];

	/* a return probe, or a probe on the function's own exits (probe/resolve.h) */
	if (ret && p->nexits)
		trap += (o->cal.ok ? o->cal.entry_ns : default_entry_ns)[p->exits_cls] +
			prog[SPAN_PROG_EXIT];
	else if (ret)
		trap += (o->cal.ok ? o->cal.return_ns : DEFAULT_RETURN_NS) + prog[SPAN_PROG_RETURN];
	return trap + prog[SPAN_PROG_ENTRY];
}

static uint64_t targets_cpu(const struct overhead *o)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < o->npids; i++)
		sum += o->cpu_last[i] - o->cpu_start[i];
	return sum;
}

/* A function as people write it: onnx::Conv::Compute, not _ZN4onnx4Conv7ComputeERNS_7ContextE
 * (its parameters left out: the warning names three in a line). */
static const char *shown_name(const char *symbol)
{
	const struct demangled *d = demangle__get(symbol);

	return d ? d->base : symbol;
}

struct cost {
	uint32_t id;
	double ns;
};

static int cost_cmp(const void *a, const void *b)
{
	double x = ((const struct cost *)a)->ns, y = ((const struct cost *)b)->ns;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The costliest first, until the rest fits in the budget; says which, everywhere. */
static void shed(struct recording *r, struct cost *c, size_t n, double total, uint64_t dcpu,
		 uint64_t now)
{
	struct budget *b = &r->budget;
	double removed = 0, share = total / dcpu;
	char names[512] = "", name[256], esc[sizeof(names) * 6], args[sizeof(esc) + 128];
	size_t k = 0, len = 0, got;

	qsort(c, n, sizeof(*c), cost_cmp);
	for (; k < n && c[k].ns > 0; k++) {
		/* against the CPU time measured with them: the next checks shed more if the
		 * target, faster now, still pays too much */
		if (total - removed <= b->max * dcpu)
			break;
		b->shed[c[k].id] = true;
		removed += c[k].ns;
		if (k < NAMES_SHOWN && len < sizeof(names)) /* a name from the target: shown safely */
			len += snprintf(names + len, sizeof(names) - len, "%s%s %.1f%%", k ? ", " : "",
					printable(shown_name(r->tracked.probes.v[c[k].id].function),
						  name, sizeof(name)),
					100 * c[k].ns / dcpu);
	}
	if (!k)
		return;
	/* ignored in BPF first, then detached: the calls under way end as spans, new ones are
	 * not begun, and the returns of those are not counted as unmatched */
	for (size_t i = 0; i < k; i++) {
		struct probe_cfg cfg = r->tracked.probes.v[c[i].id].cfg;
		uint32_t id = c[i].id;

		cfg.flags |= PROBE_SHED;
		if (bpf_map__update_elem(r->tracked.cfg_map, &id, sizeof(id), &cfg, sizeof(cfg),
					 BPF_EXIST))
			pr_warn("probe %u: cannot mark it shed (%s): calls of it under way as it "
				"goes may be counted as returns without an entry", id, strerror(errno));
	}
	got = attach__shed(&r->tracked.attachment, b->shed, b->n);
	b->relink_ns += now_ns() - now;
	if (!b->nshed) {
		b->shed_ns = now;
		b->shed_share = share;
	}
	b->nshed += got;
	status__clear(&r->status);
	pr_warn("probes cost the target %.1f%% of its CPU time, over the --max-overhead budget of "
		"%.0f%%: stopped probing %zu function%s (%s%s); the rest are still recorded",
		100 * share, 100 * b->max, k, plural_s(k), names, k > NAMES_SHOWN ? ", ..." : "");
	json_escape(esc, sizeof(esc), names, sizeof(names));
	snprintf(args, sizeof(args), "\"share\":%.4f,\"budget\":%.4f,\"functions\":%zu,\"costliest\":"
		 "\"%s\"", share, b->max, k, esc);
	for (size_t i = 0; i < r->consumer.npids; i++)
		trace_writer__instant(r->writer, r->consumer.pids[i], r->consumer.pids[i], now,
				      "probes shed (over --max-overhead)", args);
}

void budget__check(struct recording *r, uint64_t now)
{
	struct budget *b = &r->budget;
	size_t n = r->tracked.probes.cnt;
	uint64_t cpu, dcpu;
	double prog[SPAN_PROGS], total = 0;
	int fds[SPAN_PROGS];
	struct cost *c;
	size_t nc = 0;

	if (!b->max || !r->overhead.started || !r->overhead.npids)
		return;
	grow(b, n > r->ncalls ? n : r->ncalls);
	cpu = targets_cpu(&r->overhead);
	if (!b->last_ns) {
		b->last_ns = now;
		b->last_cpu = cpu;
		if (r->ncalls)
			memcpy(b->last_calls, r->calls_per_probe, r->ncalls * sizeof(uint64_t));
		return;
	}
	dcpu = cpu > b->last_cpu ? cpu - b->last_cpu : 0;
	recording__span_prog_fds(r, fds);
	for (int i = 0; i < SPAN_PROGS; i++)
		prog[i] = prog_ns(&r->overhead, fds[i]);
	c = xcalloc(n + 1, sizeof(*c));
	for (size_t id = 0; id < n && id < r->ncalls; id++) {
		uint64_t d = r->calls_per_probe[id] - b->last_calls[id];

		b->last_calls[id] = r->calls_per_probe[id];
		if (!d || b->shed[id])
			continue;
		c[nc] = (struct cost){ id, d * hit_ns(r, id, prog) };
		total += c[nc++].ns;
	}
	/* a share of a mostly idle target is not worth a function: less than 1% of a CPU is
	 * within any budget */
	if (total < MIN_COST_SHARE * (now - b->last_ns))
		total = 0;
	b->last_ns = now;
	b->last_cpu = cpu;
	if (dcpu < MIN_CPU_NS || total <= b->max * dcpu) {
		b->over = 0;
	} else if (++b->over >= 2) { /* a second over, not one busy moment */
		shed(r, c, nc, total, dcpu, now);
		b->over = 0;
	}
	free(c);
}

void budget__print(const struct recording *r, FILE *f)
{
	const struct budget *b = &r->budget;
	size_t shown = 0;

	if (!b->nshed)
		return;
	fprintf(f, "budget: %zu function%s no longer probed from %.1fs (probes cost %.1f%% of the "
		"target's CPU time, over --max-overhead %.0f%%):", b->nshed, plural_s(b->nshed),
		(b->shed_ns - r->t0) / 1e9, 100 * b->shed_share, 100 * b->max);
	for (size_t id = 0; id < b->n && id < r->tracked.probes.cnt; id++) {
		if (b->shed[id] && shown++ < 8) {
			char *name = text_safe_dup(shown_name(r->tracked.probes.v[id].function));

			fprintf(f, " %s", name);
			free(name);
		}
	}
	fprintf(f, "%s\n", shown > 8 ? " ..." : "");
}

void budget__add_json(const struct recording *r, struct cJSON *meta)
{
	const struct budget *b = &r->budget;
	cJSON *o, *a;

	cJSON_AddNumberToObject(meta, "max_overhead", b->max);
	if (!b->nshed)
		return;
	o = cJSON_AddObjectToObject(meta, "shed");
	cJSON_AddNumberToObject(o, "at_ns", b->shed_ns - r->t0);
	cJSON_AddNumberToObject(o, "share", b->shed_share);
	cJSON_AddNumberToObject(o, "relink_ns", b->relink_ns);
	a = cJSON_AddArrayToObject(o, "functions");
	for (size_t id = 0; id < b->n && id < r->tracked.probes.cnt; id++)
		if (b->shed[id])
			cJSON_AddItemToArray(a, cJSON_CreateString(
							shown_name(r->tracked.probes.v[id].function)));
}

void budget__free(struct budget *b)
{
	free(b->last_calls);
	free(b->shed);
	free(b->cls);
	memset(b, 0, sizeof(*b));
}
