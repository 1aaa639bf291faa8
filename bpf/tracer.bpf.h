/* SPDX-License-Identifier: MIT */
/* Maps and helpers shared by the BPF programs (BPF side only). The maps are weak so that every
 * object that includes this header links into one set of maps. */
#ifndef TRACER_BPF_H
#define TRACER_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "events.h"

#define BPF_RB_NO_WAKEUP 1
#define BPF_RB_FORCE_WAKEUP 2
#define BPF_RB_AVAIL_DATA 0

/* Settings written by userspace before load. */
extern const volatile __u64 min_dur_ns;
/* Probes attached to every process mapping an object (--follow, -a): filter by tgid here. */
extern const volatile bool filter_tgid;
extern const volatile bool follow;	/* children of traced processes are traced */
extern const volatile bool system_wide; /* -a: any process calling a probed function */
/* enum record_phase, written by userspace while recording. */
extern volatile __u32 phase;

/* A ring buffer per CPU: one shared by every CPU makes each record wait on one lock and one
 * cache line that all CPUs write. Userspace creates the rings (--buffer-size, split among the
 * CPUs), one per CPU id, and merges them in time order (record/rings.h). */
struct cpu_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* the template only: userspace sizes the rings */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* sized to the CPUs by userspace */
	__type(key, __u32);
	__array(values, struct cpu_ring);
} rings __weak SEC(".maps");

/* Traced processes, by tgid: a process leaves it when it is freed (sched.bpf.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u8);
} targets __weak SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters __weak SEC(".maps");

/* What each probe captures; sized to the probe table by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct probe_cfg);
} probe_cfgs __weak SEC(".maps");

/* How USDT probes fetch their arguments, by probe id (only USDT probes with arguments). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct usdt_cfg);
} usdt_cfgs __weak SEC(".maps");

/* Per-thread state. Kernels 5.11 on keep it in task storage, reached from the task and gone
 * with it. The compat object (tracer_compat.bpf.o, for 5.10 to 5.16) keeps it in a hash by
 * thread id instead, made from storage_zero on first use and deleted at the thread's exit
 * (sched.bpf.c on_exit); preallocated, as its programs may run where allocating cannot. Both
 * objects have the same maps, programs and variables: userspace loads either through one
 * skeleton (record/setup.c). */
#ifdef TRACER_COMPAT
#define COMPAT_THREADS 4096
#define TASK_STORAGE(vtype, compat_entries)                                                   \
	__uint(type, BPF_MAP_TYPE_HASH);                                                      \
	__uint(max_entries, compat_entries);                                                  \
	__type(key, __u32);                                                                   \
	__type(value, vtype)
#else
#define TASK_STORAGE(vtype, compat_entries)                                                   \
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);                                              \
	__uint(map_flags, BPF_F_NO_PREALLOC);                                                 \
	__type(key, int);                                                                     \
	__type(value, vtype)
#endif

struct {
	TASK_STORAGE(struct span_stack, COMPAT_THREADS);
} stacks __weak SEC(".maps");

/* sched_switch's arguments: prev_state is one from 5.18 on; before, it is read from the task
 * (still the state it went to sleep in, at the tracepoint). */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

#ifdef TRACER_COMPAT
#define SWITCH_ARGS bool preempt, struct task_struct *prev, struct task_struct *next
static __always_inline unsigned int prev_state_of(struct task_struct *prev)
{
	struct task_struct___old *old = (void *)prev;

	if (bpf_core_field_exists(old->state))
		return BPF_CORE_READ(old, state);
	return BPF_CORE_READ(prev, __state);
}
#define PREV_STATE prev_state_of(prev)
#else
#define SWITCH_ARGS                                                                             \
	bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state
#define PREV_STATE prev_state
#endif

/* Zeros as large as the largest per-thread value: a new hash entry's first value (compat). */
extern const char storage_zero[sizeof(struct span_stack)];

#ifdef TRACER_COMPAT
/* 5.10: no bpf_get_current_task_btf (5.11): the current task is read with probes. */
#define current_task() ((struct task_struct *)bpf_get_current_task())

static __always_inline void *tid_storage(void *map, __u32 tid, bool create)
{
	void *v = bpf_map_lookup_elem(map, &tid);

	if (v || !create)
		return v;
	/* full: NULL, counted by the caller (CNT_NO_STORAGE) */
	bpf_map_update_elem(map, &tid, storage_zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, &tid);
}

#define task_storage(map, t, create) tid_storage(map, BPF_CORE_READ(t, pid), create)
#define current_storage(map, create) tid_storage(map, (__u32)bpf_get_current_pid_tgid(), create)
#else
#define current_task() bpf_get_current_task_btf()
#define task_storage(map, t, create)                                                          \
	bpf_task_storage_get(map, t, 0, (create) ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0)
#define current_storage(map, create) task_storage(map, bpf_get_current_task_btf(), create)
#endif

/* The link's cookie: the probe id (and COOKIE_ODD_LINK), or COOKIE_BY_SITE for a tracefs
 * event's link. Before 5.15 links carry none: every uprobe is a tracefs event's there. */
#ifdef TRACER_COMPAT
#define link_cookie(ctx) ((__u64)COOKIE_BY_SITE)
#else
#define link_cookie(ctx) bpf_get_attach_cookie(ctx)
#endif

/* A probe program of thread tid on this CPU that read the clock at ns and has not submitted
 * yet: a Python read of that thread meanwhile (a tick's interrupt, a switch's when the program
 * is preempted) is stamped with ns. Uprobe programs take interrupts: without the stamp, such a
 * read reaches the ring first with a later time than the record that follows it.
 * - a wait inside the interpreter being entered (span_enter): the stack is the wait's.
 *   span_stack.entering_ns says the same once the thread's stack exists; this covers the
 *   thread's first span, while its task storage is made (a new thread's first lock wait: a
 *   tick 34 us into it read the stack, unstamped, and the Python frames new in that read
 *   started inside the wait);
 * - a call ending (py_stamp_end): the stack is the one it returned to. Unstamped, a tick
 *   ~8 us after a qsort's end, in the ring before its span, ended the Python frames of the
 *   qsort's callback after the qsort (5 runs in 200 of a test under load). Set before the
 *   clock is read, PY_STAMP_PENDING until it is, and a read then is left out: set after it,
 *   1 run in 200 still had one.
 * Per CPU: uprobe programs do not migrate, and one preempted here by another's entry loses only
 * this stamp. An array indexed by CPU (CPUs past its end share slots, told apart by tid), not
 * a per-CPU map: its lookup's key on the stack took span_enter's calls past 6.1's 512 bytes of
 * stack. */
#define PY_STAMP_CPUS 1024
#define PY_STAMP_PENDING 1 /* no clock reads 1 ns */

extern __u64 py_stamp_ns[PY_STAMP_CPUS];
extern __u32 py_stamp_tid[PY_STAMP_CPUS];

/* This CPU's slot of those. */
static __always_inline __u32 py_stamp_here(void)
{
	return bpf_get_smp_processor_id() & (PY_STAMP_CPUS - 1);
}

/* Returns the slot. */
static __always_inline __u32 py_stamp_reads(__u64 ns)
{
	__u32 here = py_stamp_here();

	py_stamp_tid[here] = (__u32)bpf_get_current_pid_tgid();
	*(volatile __u64 *)&py_stamp_ns[here] = ns;
	return here;
}

/* The clock for the end of a call (or a wait's start: span_enter), this thread's Python reads
 * stamped with it from before it is read (py: Python frames are read) until
 * py_unstamp_reads(). */
static __always_inline __u64 py_stamp_end(bool py)
{
	__u32 here;
	__u64 now;

	if (!py)
		return bpf_ktime_get_ns();
	here = py_stamp_reads(PY_STAMP_PENDING);
	now = bpf_ktime_get_ns();
	*(volatile __u64 *)&py_stamp_ns[here] = now;
	return now;
}

/* The program submitted: this thread's reads are its own again. */
static __always_inline void py_unstamp_reads(void)
{
	__u32 here = py_stamp_here();

	if (py_stamp_tid[here] == (__u32)bpf_get_current_pid_tgid())
		*(volatile __u64 *)&py_stamp_ns[here] = 0;
}

/* Atomic although per-CPU: a uprobe program may be preempted between the load and the store
 * of `*v += 1`, and another program run on the same CPU meanwhile would be lost. The budget
 * (record/budget.c) and the summary add these up. */
static __always_inline void count(enum counter c)
{
	__u32 key = c;
	__u64 *v = bpf_map_lookup_elem(&counters, &key);

	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline bool is_target(__u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

static __always_inline void add_target(__u32 tgid)
{
	__u8 one = 1;

	/* full: counted, and said in the summary */
	if (bpf_map_update_elem(&targets, &tgid, &one, BPF_ANY))
		count(CNT_TARGETS_FULL);
}

/* Processes to stop at their entry point once their libraries are mapped (followed execs). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} stop_pids __weak SEC(".maps");

/* This CPU's ring. The programs run with migration disabled: the CPU stays the same until the
 * record is submitted. */
static __always_inline void *cpu_ring(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&rings, &cpu);
}

/* A record of size bytes in this CPU's ring, or NULL (full: the caller counts it lost). */
static __always_inline void *reserve(__u64 size)
{
	void *rb = cpu_ring();

	return rb ? bpf_ringbuf_reserve(rb, size, 0) : NULL;
}

static __always_inline void task_event(struct task_struct *t, struct task_struct *parent,
				       __u32 event, const char *comm)
{
	struct task_rec *r = reserve(sizeof(*r));

	if (!r) {
		count(CNT_LOST_TASK);
		return;
	}
	r->type = REC_TASK;
	r->event = event;
	r->ts = bpf_ktime_get_ns();
	/* (read with probes: t may be the current task, not a BTF pointer, in compat) */
	r->pid = BPF_CORE_READ(t, tgid);
	r->tid = BPF_CORE_READ(t, pid);
	r->parent_pid = parent ? BPF_CORE_READ(parent, tgid) : 0;
	r->parent_tid = parent ? BPF_CORE_READ(parent, pid) : 0;
	bpf_probe_read_kernel_str(r->comm, COMM_LEN, comm);
	/* Thread life is rare and the reader wants names early: always wake it. */
	bpf_ringbuf_submit(r, 0);
}

/* Other records never wake the reader: a wake-up per record costs the traced thread more than
 * the whole span path, and the reader polls the rings every few ms (record/recording.h:
 * POLL_MS), which a full ring would take far longer to fill. */

static __always_inline void fill_span(struct span_rec *r, const struct span_stack *st,
				      const struct frame *f, __u32 depth, __u64 end_ns, __u32 flags)
{
	r->type = REC_SPAN;
	r->probe_id = f->probe_id;
	r->pid = st->pid;
	r->tid = st->tid;
	r->start_ns = f->start_ns;
	r->end_ns = end_ns;
	r->depth = depth;
	r->flags = flags;
}

/* Submits frame f (at stack depth) as a span ending at end_ns; spans of probes that capture
 * carry their values in a longer record. */
static __always_inline void submit_frame(const struct span_stack *st, const struct frame *f,
					 __u32 depth, __u64 end_ns, __u32 flags)
{
	if (!(flags & (SPAN_INCOMPLETE | SPAN_INSTANT)) && end_ns - f->start_ns < min_dur_ns) {
		count(CNT_SHORT_SPANS);
		return;
	}
	if (f->flags & (PROBE_NAME_FROM | PROBE_ARGS | PROBE_RET)) {
		struct span_capture_rec *r = reserve(sizeof(*r));

		if (!r) {
			count(CNT_LOST_SPAN);
			return;
		}
		fill_span(&r->span, st, f, depth, end_ns, flags | SPAN_CAPTURE);
		__builtin_memcpy(&r->cap, &f->cap, sizeof(r->cap));
		bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	} else {
		struct span_rec *r = reserve(sizeof(*r));

		if (!r) {
			count(CNT_LOST_SPAN);
			return;
		}
		fill_span(r, st, f, depth, end_ns, flags);
		bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	}
	/* spans submitted: counted by the reader (recording__handle_record) */
}

static __always_inline void emit_span(struct span_stack *st, __u32 i, __u64 end_ns, __u32 flags)
{
	if (i >= MAX_FRAMES)
		return;
	submit_frame(st, &st->frames[i], i, end_ns, flags);
}

/* The stack pointer of the probed native call a probe hit, switch or tick at user stack pointer
 * sp is inside, still open (above sp: not one that returned unseen), and not an interpreter
 * wait (whose entry reads no Python stack); 0 if none. */
static __always_inline __u64 outer_native_call(const struct span_stack *st, __u64 sp)
{
	__u32 top = st->depth;
	const struct frame *f;

	if (top == 0 || top > MAX_FRAMES)
		return 0;
	f = &st->frames[(top - 1) & (MAX_FRAMES - 1)];
	return f->sp > sp && !(f->flags & PROBE_PY_WAIT) ? f->sp : 0;
}

/* Whether the stack pointers a and b are on different stacks: one on the thread's signal stack
 * (sigaltstack), the other not. A handler's calls there say nothing of the frames below. */
static __always_inline bool other_stack(__u64 a, __u64 b)
{
	struct task_struct *t = current_task();
	__u64 lo = BPF_CORE_READ(t, sas_ss_sp), hi = lo + BPF_CORE_READ(t, sas_ss_size);

	return lo < hi && ((a >= lo && a < hi) != (b >= lo && b < hi));
}

/* Closes frames the thread can no longer be inside: those at or below stack pointer sp on the
 * same stack. A longjmp, or the kernel's 64-deep return limit, leaves such frames without a
 * return (they end incomplete); a C++ exception unwinds them (SPAN_EXCEPTION, given or while
 * one is in flight). */
static __noinline void close_stale_frames(struct span_stack *st, __u64 sp, __u64 now, __u32 flags)
{
	if (!flags)
		flags = st->in_flight ? SPAN_EXCEPTION : SPAN_INCOMPLETE;
	for (int n = 0; n < MAX_FRAMES; n++) {
		__u32 top = st->depth;
		__u64 fsp;

		if (top == 0 || top > MAX_FRAMES)
			break;
		fsp = st->frames[(top - 1) & (MAX_FRAMES - 1)].sp;
		if (fsp > sp || other_stack(fsp, sp))
			break;
		emit_span(st, top - 1, now, flags);
		count(flags & SPAN_EXCEPTION ? CNT_EXCEPTION_SPANS : CNT_STALE_FRAMES);
		st->depth = top - 1;
	}
}

/* The common case inline: nothing to close. The loop is a function of its own so that its
 * registers spilled do not add to the stack of span_enter, whose chain through py_read must fit
 * 6.1's 512 bytes (test_bpf_rules). */
static __always_inline void close_stale(struct span_stack *st, __u64 sp, __u64 now, __u32 flags)
{
	__u32 top = st->depth;

	if (top == 0 || top > MAX_FRAMES || st->frames[(top - 1) & (MAX_FRAMES - 1)].sp > sp)
		return;
	close_stale_frames(st, sp, now, flags);
}

#endif
