// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The least a span costs (bench/floor.c -s): at the entry a clock read kept in the thread's
 * task storage; at the return a clock read, the storage taken again and one record in a ring.
 * What tracer's span programs cost beyond these is what they do besides (their stack, its
 * checks, the probe's configuration, Python reads). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define BPF_RB_NO_WAKEUP 1

struct least_span {
	__u64 start_ns;
	__u64 end_ns;
	__u32 tid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} starts SEC(".maps");

/* A ring per CPU, as tracer has (bpf/tracer.bpf.h): made and sized by floor, which reads them
 * every 10 ms (no wake-up a record). */
struct cpu_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* the template only */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* sized to the CPUs by floor */
	__type(key, __u32);
	__array(values, struct cpu_ring);
} rings SEC(".maps");

SEC("uprobe")
int least_enter(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 *start = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), 0,
					    BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (start)
		*start = now;
	return 0;
}

SEC("uretprobe")
int least_exit(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 *start = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), 0, 0);
	__u32 cpu = bpf_get_smp_processor_id();
	struct least_span *r;
	void *ring;

	if (!start || !(ring = bpf_map_lookup_elem(&rings, &cpu)))
		return 0;
	r = bpf_ringbuf_reserve(ring, sizeof(*r), 0);
	if (!r)
		return 0;
	r->start_ns = *start;
	r->end_ns = now;
	r->tid = (__u32)bpf_get_current_pid_tgid();
	r->pad = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
