// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The scheduler's view of the traced threads: switches, wake-ups, and thread life (new, exit,
 * rename, exec). Filtered by tgid in the kernel. */
#include "tracer.bpf.h"
#include "python.bpf.h"

/* Two loads through the task's BTF pointer: a helper call per name would cost each switch and
 * wake-up more than the rest of its record. The kernel keeps comm NUL-terminated. */
static __always_inline void copy_comm(char *dst, const struct task_struct *t)
{
	__builtin_memcpy(dst, t->comm, COMM_LEN);
}

/* A traced thread's waking, until its switch in (struct wake_info). nsw: its switches out when
 * woken; a switch in that finds another count comes after a switch out this waking did not
 * end (one missed while paused): the waking is stale and dropped. */
struct wake_pending {
	struct wake_info w;
	__u64 nsw;
};

struct {
	TASK_STORAGE(struct wake_pending, COMPAT_THREADS);
} wakes SEC(".maps");

static __always_inline void fill_switch(struct switch_rec *r, __u64 ts, bool preempt,
					struct task_struct *prev, struct task_struct *next,
					unsigned int prev_state)
{
	r->cpu = bpf_get_smp_processor_id();
	r->ts = ts;
	r->prev_pid = prev->tgid;
	r->prev_tid = prev->pid;
	r->prev_prio = prev->prio;
	r->prev_state = prev_state;
	r->next_pid = next->tgid;
	r->next_tid = next->pid;
	r->next_prio = next->prio;
	r->preempt = preempt;
	copy_comm(r->prev_comm, prev);
	copy_comm(r->next_comm, next);
}

/* Whether a waking runs in an interrupt: the kernel's preempt count says it. It is a per-CPU
 * variable (__preempt_count, or a field of pcpu_hot in 6.2-6.14) that a typed ksym cannot reach
 * without CONFIG_KALLSYMS_ALL; its offset from this CPU's run queue (runqueues, reached from the
 * current task) is in the kernel's BTF, and userspace sets it here (record/irq_ctx.c) and checks
 * it once (check_irq_ctx). Where that is not possible, six programs keep the interrupt depth of
 * each CPU instead (below): they run on every interrupt, traced or not (measured, 2-CPU VM,
 * pipeline traced: 2,200 runs a second, 0.43 ms of CPU a second, a fifth of on_switch's). */
const volatile __s64 irq_pc_delta;  /* preempt count - runqueues, in the per-CPU area (0: none) */
const volatile __s64 irq_cpu_delta; /* cpu_number - runqueues: the check */
volatile __u32 irq_direct;	    /* set by userspace once the check passed */

#define PC_SOFTIRQ_OFFSET 0x100u
#define PC_HARDIRQ_MASK 0x000f0000u
#define PC_NMI_MASK 0x00f00000u

/* Fields of CONFIG_FAIR_GROUP_SCHED: without it, no run queue to start from. */
struct cfs_rq___grp {
	struct rq *rq;
} __attribute__((preserve_access_index));

struct sched_entity___grp {
	struct cfs_rq___grp *cfs_rq;
} __attribute__((preserve_access_index));

struct task_struct___grp {
	struct sched_entity___grp se;
} __attribute__((preserve_access_index));

/* This CPU's run queue: the current task's (every task has se.cfs_rq, the idle one too). Read
 * with probes, so that check_irq_ctx (a raw_tp program) loads on the oldest kernels too. */
static __always_inline void *this_rq(struct task_struct___grp *t)
{
	if (!bpf_core_field_exists(t->se.cfs_rq) || !bpf_core_field_exists(struct cfs_rq___grp, rq))
		return NULL;
	return BPF_CORE_READ(t, se.cfs_rq, rq);
}

static __always_inline __u32 read_pcpu_u32(void *rq, __s64 delta)
{
	__u32 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (char *)rq + delta);
	return v;
}

static __always_inline __u32 context_of(__u32 pc)
{
	return pc & (PC_HARDIRQ_MASK | PC_NMI_MASK) ? WAKE_HARDIRQ
	       : pc & PC_SOFTIRQ_OFFSET		     ? WAKE_SOFTIRQ
						     : WAKE_TASK;
}

/* Run once by userspace (BPF_PROG_TEST_RUN, in a system call): the offsets must find this
 * CPU's number, and a task context. 1: they do. */
SEC("raw_tp")
int check_irq_ctx(void *ctx)
{
	void *rq = this_rq((void *)bpf_get_current_task());

	if (!rq || !irq_pc_delta || !irq_cpu_delta)
		return 0;
	return read_pcpu_u32(rq, irq_cpu_delta) == bpf_get_smp_processor_id() &&
	       context_of(read_pcpu_u32(rq, irq_pc_delta)) == WAKE_TASK;
}

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

/* Where this CPU's preempt count is, found at the CPU's first waking: one read after that. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} pc_addr SEC(".maps");

static __always_inline __u32 wake_context(void)
{
	__u32 zero = 0, pc = 0;
	struct irq_depth *d;
	__u64 *a;
	void *rq;

	if (irq_direct && (a = bpf_map_lookup_elem(&pc_addr, &zero))) {
		/* sched_waking runs with preemption off: nothing else writes this CPU's value */
		if (!*a && (rq = this_rq((void *)current_task())))
			*a = (__u64)rq + irq_pc_delta;
		if (*a) {
			bpf_probe_read_kernel(&pc, sizeof(pc), (void *)*a);
			return context_of(pc);
		}
	}
	d = bpf_map_lookup_elem(&irq_depth, &zero);

	if (!d)
		return WAKE_TASK;
	return d->hard ? WAKE_HARDIRQ : d->soft ? WAKE_SOFTIRQ : WAKE_TASK;
}

/* The switch the kernel last reported on each CPU: the task it put there, and when. The kernel
 * does not report every switch: on the 6.18 VM this was built on, no switch out of the guest
 * agent's threads (tokio-rt-worker, of pid 1) fires sched_switch, in ftrace or in BPF. A traced
 * thread found running on a CPU where the last switch reported put another was switched in
 * unreported; without that switch, what its Python frames began since is placed half a tick
 * late (python/py_spans.c). Arrays indexed by CPU, not shared: CPUs from SWITCH_CPUS on are not
 * checked. */
#define SWITCH_CPUS 1024
__u64 cpu_put_ns[SWITCH_CPUS];
__u64 cpu_put_task[SWITCH_CPUS];
__u32 cpu_put_tid[SWITCH_CPUS];
/* ktime - the run queue's clock, on each CPU, and when that was measured: the scheduler keeps a
 * thread's arrival on the CPU (sched_info.last_arrival) on the run queue's clock */
__s64 cpu_clock_delta[SWITCH_CPUS];
__u64 cpu_clock_at[SWITCH_CPUS];
#define CLOCK_CALIBRATE_NS 100000000ull

static __always_inline void put_here(__u64 now, struct task_struct *next)
{
	__u32 c = bpf_get_smp_processor_id();

	if (c >= SWITCH_CPUS) /* (not shared: another CPU's switch would pass for a lost one) */
		return;
	cpu_put_ns[c] = now;
	cpu_put_tid[c] = next->pid;
	cpu_put_task[c] = (__u64)next;
}

struct rq___clock {
	__u64 clock;
} __attribute__((preserve_access_index));

/* At a switch the run queue's clock is fresh (__schedule updates it before it picks). */
static __always_inline void calibrate_clock(__u64 now)
{
	__u32 c = bpf_get_smp_processor_id();
	struct rq___clock *rq;
	__u64 clock;

	if (c >= SWITCH_CPUS || now - cpu_clock_at[c] < CLOCK_CALIBRATE_NS)
		return;
	rq = this_rq((void *)current_task());
	clock = rq ? BPF_CORE_READ(rq, clock) : 0;
	if (!clock)
		return;
	cpu_clock_delta[c] = now - clock;
	cpu_clock_at[c] = now;
}

/* The current thread, traced, runs here: if the last switch reported here put another, its own
 * switch in went unreported. It is reported now, at its arrival as the scheduler logged it, if
 * that lies between the last switch reported here and now; else it is not (userspace marks the
 * thread's state unknown there, as for a switch lost). */
__hidden int switch_in_check(void)
{
	__u32 c = bpf_get_smp_processor_id();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct task_struct *t, *was;
	struct switch_rec *r;
	__u64 at, now;

	if (c >= SWITCH_CPUS || cpu_put_tid[c] == tid || !cpu_put_ns[c])
		return 0;
	now = bpf_ktime_get_ns();
	t = (void *)current_task();
	was = (void *)cpu_put_task[c];
	at = BPF_CORE_READ(t, sched_info.last_arrival) + cpu_clock_delta[c];
	cpu_put_tid[c] = tid;
	cpu_put_task[c] = (__u64)t;
	if (!cpu_clock_at[c] || at <= cpu_put_ns[c] || at >= now)
		return 0;
	cpu_put_ns[c] = at;
	count(CNT_UNREPORTED_SWITCHES);
	r = reserve(sizeof(*r));
	if (!r) {
		count(CNT_LOST_SWITCH);
		return 0;
	}
	r->type = REC_SWITCH;
	r->cpu = c;
	r->ts = at;
	/* what it put here (a task since freed reads as whatever its memory holds: a name) */
	r->prev_pid = BPF_CORE_READ(was, tgid);
	r->prev_tid = BPF_CORE_READ(was, pid);
	r->prev_prio = BPF_CORE_READ(was, prio);
	r->prev_state = 1; /* TASK_INTERRUPTIBLE: not known; an agent's thread parks */
	bpf_probe_read_kernel(r->prev_comm, COMM_LEN, &was->comm);
	r->next_pid = BPF_CORE_READ(t, tgid);
	r->next_tid = tid;
	r->next_prio = BPF_CORE_READ(t, prio);
	r->preempt = 0;
	bpf_probe_read_kernel(r->next_comm, COMM_LEN, &t->comm);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, SWITCH_ARGS)
{
	__u32 prev_pid = prev->tgid, next_pid = next->tgid;
	/* the idle task (0) is never traced: half the switches of a thread that sleeps */
	bool next_traced = next_pid && is_target(next_pid);
	bool prev_traced = prev_pid && is_target(prev_pid);
	struct wake_pending *w = NULL;
	__u64 now;

	if (phase >= PHASE_DETACHING)
		return 0;
	/* (the current task is prev) */
	if (prev_traced)
		switch_in_check();
	now = bpf_ktime_get_ns();
	put_here(now, next);
	if (!next_traced && !prev_traced)
		return 0;
	calibrate_clock(now);
	if (next_traced)
		w = task_storage(&wakes, next, false);
	if (w && w->w.ts) {
		__u64 ts = w->w.ts;

		w->w.ts = 0; /* used once */
		if (w->nsw == next->nvcsw + next->nivcsw) {
			struct switch_wake_rec *r = reserve(sizeof(*r));

			if (!r) {
				count(CNT_LOST_SWITCH);
				return 0;
			}
			r->sw.type = REC_SWITCH_WAKE;
			fill_switch(&r->sw, now, preempt, prev, next, PREV_STATE);
			__builtin_memcpy(&r->wake, &w->w, sizeof(r->wake));
			r->wake.ts = ts;
			bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
			return 0;
		}
	}
	struct switch_rec *r = reserve(sizeof(*r));

	if (!r) {
		count(CNT_LOST_SWITCH);
		return 0;
	}
	r->type = REC_SWITCH;
	fill_switch(r, now, preempt, prev, next, PREV_STATE);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

/* What a waking of p tells: who woke it, from where. */
static __always_inline void fill_wake(struct wake_info *w, struct task_struct *p, bool waking)
{
	struct task_struct *waker = current_task();
	struct span_stack *st;

	w->ts = bpf_ktime_get_ns();
	w->target_cpu = p->wake_cpu;
	w->cpu = bpf_get_smp_processor_id();
#ifdef TRACER_COMPAT /* not a BTF pointer: read with probes */
	w->waker_pid = BPF_CORE_READ(waker, tgid);
	w->waker_tid = BPF_CORE_READ(waker, pid);
	bpf_probe_read_kernel(w->waker_comm, COMM_LEN, waker->comm);
#else
	w->waker_pid = waker->tgid;
	w->waker_tid = waker->pid;
	copy_comm(w->waker_comm, waker);
#endif
	w->irq = wake_context();
	/* an interrupt's wake-up has no span to start from: the task under it woke no one; flows
	 * start from sched_waking only */
	st = waking && !w->irq && (w->waker_pid == p->tgid || is_target(w->waker_pid))
		     ? task_storage(&stacks, waker, false)
		     : NULL;
	w->waker_depth = st ? st->depth : 0;
	if (waking && !w->irq)
		py_woke(w->ts);
}

static __always_inline int wakeup(struct task_struct *p, __u32 kind)
{
	struct wake_info w;
	struct wakeup_rec *r;

	fill_wake(&w, p, kind == WAKEUP_WAKING);
	r = reserve(sizeof(*r));
	if (!r) {
		count(CNT_LOST_WAKEUP);
		return 0;
	}
	r->type = REC_WAKEUP;
	r->kind = kind;
	r->ts = w.ts;
	r->pid = p->tgid;
	r->tid = p->pid;
	r->prio = p->prio;
	r->target_cpu = w.target_cpu;
	r->cpu = w.cpu;
	r->waker_pid = w.waker_pid;
	r->waker_tid = w.waker_tid;
	r->irq = w.irq;
	r->_pad = 0;
	r->waker_depth = w.waker_depth;
	copy_comm(r->comm, p);
	__builtin_memcpy(r->waker_comm, w.waker_comm, COMM_LEN);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

/* sched_entity.sched_delayed (6.12+): a thread that blocked but stays queued until picked */
struct sched_entity___delayed {
	unsigned char sched_delayed;
} __attribute__((preserve_access_index));

/* Whether a switch in of p follows its waking: it is off the run queue, or on it only as a
 * delayed dequeue. Otherwise it is still queued (running, or preempted before it could sleep):
 * the waking ends no switch out and is sent now. A race with its dequeue on another CPU only
 * sends now one that could have waited. */
static __always_inline bool switch_in_follows(struct task_struct *p)
{
	struct sched_entity___delayed *se = (void *)&p->se;

	if (!p->on_rq)
		return true;
	return bpf_core_field_exists(se->sched_delayed) && BPF_CORE_READ(se, sched_delayed);
}

/* The waking is kept for the switch in (one record for both); the wake-up that follows it
 * (sched_wakeup) says nothing more, and is not traced: userspace writes its line from this. */
SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	struct wake_pending *w;

	if (phase >= PHASE_DETACHING || !is_target(p->tgid))
		return 0;
	if (switch_in_follows(p)) {
		w = task_storage(&wakes, p, true);
		if (w) {
			fill_wake(&w->w, p, true);
			w->nsw = p->nvcsw + p->nivcsw;
			return 0;
		}
		count(CNT_NO_STORAGE);
	}
	return wakeup(p, WAKEUP_WAKING);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	if (phase >= PHASE_DETACHING || !is_target(p->tgid))
		return 0;
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
	st = task_storage(&stacks, p, false);
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
#ifdef TRACER_COMPAT /* the thread's entries, by a tid that may be given again */
	{
		__u32 tid = p->pid;

		bpf_map_delete_elem(&stacks, &tid);
		bpf_map_delete_elem(&wakes, &tid);
	}
#endif
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
	st = task_storage(&stacks, p, false);
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
