// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The scheduler's view of the traced threads: switches, wake-ups, and thread life (new, exit,
 * rename, exec). Filtered by tgid in the kernel. */
#include "tracer.bpf.h"

/* Two loads through the task's BTF pointer: a helper call per name would cost each switch and
 * wake-up more than the rest of its record. The kernel keeps comm NUL-terminated. */
static __always_inline void copy_comm(char *dst, const struct task_struct *t)
{
	__builtin_memcpy(dst, t->comm, COMM_LEN);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 prev_pid = prev->tgid, next_pid = next->tgid;
	struct switch_rec *r;

	if (phase >= PHASE_DETACHING || (!is_target(prev_pid) && !is_target(next_pid)))
		return 0;
	r = reserve(sizeof(*r));
	if (!r) {
		count(CNT_LOST_SWITCH);
		return 0;
	}
	r->type = REC_SWITCH;
	r->cpu = bpf_get_smp_processor_id();
	r->ts = bpf_ktime_get_ns();
	r->prev_pid = prev_pid;
	r->prev_tid = prev->pid;
	r->prev_prio = prev->prio;
	r->prev_state = prev_state;
	r->next_pid = next_pid;
	r->next_tid = next->pid;
	r->next_prio = next->prio;
	r->preempt = preempt;
	copy_comm(r->prev_comm, prev);
	copy_comm(r->next_comm, next);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

/* Interrupts in progress on each CPU, hard (device handlers, hrtimer callbacks) and soft: a
 * waking inside one was not done by the task it interrupted. The kernel's preempt count would
 * say it too, but reading a per-CPU kernel variable needs CONFIG_KALLSYMS_ALL. The six programs
 * run on every interrupt, traced or not, and need no check: one per-CPU add each. Measured
 * (bpf_stats, 2-CPU VM, pipeline traced): 2,200 runs a second of the six, 0.43 ms of CPU a
 * second in all, a fifth of on_switch's 2.3 ms. */
struct irq_depth {
	__u32 hard, soft;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct irq_depth);
} irq_depth SEC(".maps");

static __always_inline void irq_enter_exit(bool hard, int delta)
{
	__u32 zero = 0;
	struct irq_depth *d = bpf_map_lookup_elem(&irq_depth, &zero);
	__u32 *n;

	if (!d)
		return;
	n = hard ? &d->hard : &d->soft;
	/* attached in the middle of one: its exit comes without an entry */
	if (delta > 0 || *n)
		*n += delta;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(on_irq_entry)
{
	irq_enter_exit(true, 1);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(on_irq_exit)
{
	irq_enter_exit(true, -1);
	return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(on_hrtimer_entry)
{
	irq_enter_exit(true, 1);
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(on_hrtimer_exit)
{
	irq_enter_exit(true, -1);
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(on_softirq_entry)
{
	irq_enter_exit(false, 1);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(on_softirq_exit)
{
	irq_enter_exit(false, -1);
	return 0;
}

static __always_inline __u32 wake_context(void)
{
	__u32 zero = 0;
	struct irq_depth *d = bpf_map_lookup_elem(&irq_depth, &zero);

	if (!d)
		return WAKE_TASK;
	return d->hard ? WAKE_HARDIRQ : d->soft ? WAKE_SOFTIRQ : WAKE_TASK;
}

static __always_inline int wakeup(struct task_struct *p, __u32 kind)
{
	struct task_struct *waker = bpf_get_current_task_btf();
	__u32 pid = p->tgid;
	struct span_stack *st;
	struct wakeup_rec *r;

	if (phase >= PHASE_DETACHING || !is_target(pid))
		return 0;
	r = reserve(sizeof(*r));
	if (!r) {
		count(CNT_LOST_WAKEUP);
		return 0;
	}
	r->type = REC_WAKEUP;
	r->kind = kind;
	r->ts = bpf_ktime_get_ns();
	r->pid = pid;
	r->tid = p->pid;
	r->prio = p->prio;
	r->target_cpu = p->wake_cpu;
	r->cpu = bpf_get_smp_processor_id();
	r->waker_pid = waker->tgid;
	r->waker_tid = waker->pid;
	r->irq = wake_context();
	r->_pad = 0;
	/* an interrupt's wake-up has no span to start from: the task under it woke no one; flows
	 * start from sched_waking only */
	st = kind == WAKEUP_WAKING && !r->irq && is_target(waker->tgid)
		     ? bpf_task_storage_get(&stacks, waker, 0, 0)
		     : NULL;
	r->waker_depth = st ? st->depth : 0;
	copy_comm(r->comm, p);
	copy_comm(r->waker_comm, waker);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	return wakeup(p, WAKEUP_WAKING);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	return wakeup(p, WAKEUP_WAKEUP);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	return wakeup(p, WAKEUP_NEW);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	if (!is_target(parent->tgid))
		return 0;
	/* --follow: a new process is traced from its first instruction */
	if (follow && child->pid == child->tgid)
		add_target(child->tgid);
	task_event(child, parent, TASK_NEW, child->comm);
	return 0;
}

/* Fires for every exiting thread. Calls still open on it will never return: close them. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	struct span_stack *st;
	__u64 now;

	if (!is_target(p->tgid))
		return 0;
	st = bpf_task_storage_get(&stacks, p, 0, 0);
	if (st) {
		now = bpf_ktime_get_ns();
		for (int n = 0; n < MAX_FRAMES; n++) {
			__u32 top = st->depth;

			if (top == 0 || top > MAX_FRAMES)
				break;
			emit_span(st, top - 1, now, SPAN_INCOMPLETE);
			count(CNT_EXIT_FRAMES);
			st->depth = top - 1;
		}
	}
	task_event(p, NULL, TASK_EXIT, p->comm);
	return 0;
}

/* A process leaves the traced set when its task is freed: its main thread (tid == tgid; in an
 * exec from another thread the old main thread takes the other's tid) goes last, once every
 * thread has exited and the process is reaped, after its last switch. Until then its pid cannot
 * be given to another process; after, it may be, and that one must not look traced. */
SEC("tp_btf/sched_process_free")
int BPF_PROG(on_free, struct task_struct *p)
{
	__u32 tgid = p->tgid;

	if (p->pid == tgid)
		bpf_map_delete_elem(&targets, &tgid);
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(on_rename, struct task_struct *t, const char *comm)
{
	if (is_target(t->tgid))
		task_event(t, NULL, TASK_RENAME, comm);
	return 0;
}

/* A followed process runs a new program: stop it (it is current) until userspace has set up a
 * stop at the new program's entry point, where its libraries are mapped. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	struct span_stack *st;

	/* every exec on the machine comes here: the cheap check first */
	if (!is_target(p->tgid))
		return 0;
	/* a thread other than the main one that execs takes the main thread's id */
	st = bpf_task_storage_get(&stacks, p, 0, 0);
	if (st) {
		st->tid = p->pid;
		st->pid = p->tgid;
	}
	task_event(p, NULL, TASK_EXEC, p->comm);
	if (follow)
		bpf_send_signal(19 /* SIGSTOP */);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
