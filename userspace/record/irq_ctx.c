// SPDX-License-Identifier: MIT
#include "record/irq_ctx.h"
#include "util/util.h"
#include "tracer.skel.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A member's byte offset in a struct type, or -1. */
static int64_t member_off(const struct btf *btf, __u32 type_id, const char *name)
{
	const struct btf_type *t = btf__type_by_id(btf, btf__resolve_type(btf, type_id));
	const struct btf_member *m;

	if (!t || !btf_is_struct(t))
		return -1;
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);

		if (n && !strcmp(n, name) && !btf_member_bitfield_size(t, i))
			return btf_member_bit_offset(t, i) / 8;
	}
	return -1;
}

int irq_ctx__offsets(const struct btf *btf, int64_t *pc_delta, int64_t *cpu_delta)
{
	int64_t rq = -1, pc = -1, cpu = -1;
	const struct btf_var_secinfo *v;
	const struct btf_type *sec;
	__s32 id = btf__find_by_name_kind(btf, ".data..percpu", BTF_KIND_DATASEC);

	if (id < 0)
		return -ENOENT;
	sec = btf__type_by_id(btf, id);
	v = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, v++) {
		const struct btf_type *var = btf__type_by_id(btf, v->type);
		const char *name = var ? btf__name_by_offset(btf, var->name_off) : NULL;
		int64_t m;

		if (!name)
			continue;
		if (!strcmp(name, "runqueues"))
			rq = v->offset;
		else if (!strcmp(name, "__preempt_count"))
			pc = v->offset;
		else if (!strcmp(name, "cpu_number"))
			cpu = v->offset;
		else if (!strcmp(name, "pcpu_hot")) { /* 6.2-6.14 */
			if ((m = member_off(btf, var->type, "preempt_count")) >= 0)
				pc = v->offset + m;
			if ((m = member_off(btf, var->type, "cpu_number")) >= 0)
				cpu = v->offset + m;
		}
	}
	if (rq < 0 || pc < 0 || cpu < 0)
		return -ENOENT;
	*pc_delta = pc - rq;
	*cpu_delta = cpu - rq;
	return 0;
}

void irq_ctx__configure(struct tracer_bpf *skel)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int64_t pc, cpu;

	if (!btf)
		return;
	/* a delta of 0 would be runqueues itself: never one of these */
	if (!irq_ctx__offsets(btf, &pc, &cpu) && pc && cpu) {
		skel->rodata->irq_pc_delta = pc;
		skel->rodata->irq_cpu_delta = cpu;
	}
	btf__free(btf);
}

bool irq_ctx__choose(struct tracer_bpf *skel)
{
	LIBBPF_OPTS(bpf_test_run_opts, run);
	const char *force = getenv("TRACER_IRQ_PROGRAMS");
	struct bpf_program *irq_progs[] = {
		skel->progs.on_irq_entry,     skel->progs.on_irq_exit,
		skel->progs.on_hrtimer_entry, skel->progs.on_hrtimer_exit,
		skel->progs.on_softirq_entry, skel->progs.on_softirq_exit,
	};
	int fd = bpf_program__fd(skel->progs.check_irq_ctx);

	if ((force && *force && strcmp(force, "0")) || fd < 0 || !skel->rodata->irq_pc_delta)
		return false;
	if (bpf_prog_test_run_opts(fd, &run) || run.retval != 1) {
		pr_debug("the preempt count's offset did not check out: interrupt programs instead");
		return false;
	}
	pr_debug("wakings read the preempt count (no interrupt programs)");
	skel->bss->irq_direct = 1;
	for (size_t i = 0; i < sizeof(irq_progs) / sizeof(irq_progs[0]); i++)
		bpf_program__set_autoattach(irq_progs[i], false);
	return true;
}
