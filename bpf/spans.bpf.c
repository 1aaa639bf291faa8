// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Function spans: the uprobe pushes a frame on the thread's stack, the uretprobe pops it and
 * submits one completed span. The BPF cookie is the probe id (userspace's probe table). */
#include "tracer.bpf.h"
#include "python.bpf.h"

const volatile __u64 min_dur_ns = 0;
/* Launch mode: the command tracer started, stopped at its entry point to attach. */
const volatile __u32 launch_pid = 0;
const volatile bool filter_tgid = false;
const volatile bool follow = false;
const volatile bool system_wide = false;

/* Whether this call is traced, with probes shared by every process that maps the object
 * (pid-filtered links need no check). -a takes in any process on its first call. */
static __always_inline bool traced_process(bool entry)
{
	__u32 tgid;

	if (!filter_tgid)
		return true;
	tgid = bpf_get_current_pid_tgid() >> 32;
	if (is_target(tgid))
		return true;
	if (!system_wide || !entry)
		return false;
	add_target(tgid);
	/* named after the process (its main thread), not the thread that called */
	task_event(current_task(), NULL, TASK_SEEN,
		   BPF_CORE_READ(current_task(), group_leader)->comm);
	return true;
}

/* Written by userspace while the probes are live (enum record_phase): while attaching, a return
 * may come from a call entered before its entry probe was attached; while paused, entries are
 * not pushed, so that every frame pushed still meets its return; while detaching nothing is
 * recorded (the calls still open are read from task storage). */
volatile __u32 phase = PHASE_ATTACHING;

__u64 py_stamp_ns[PY_STAMP_CPUS]; /* tracer.bpf.h */
__u32 py_stamp_tid[PY_STAMP_CPUS];
const char storage_zero[sizeof(struct span_stack)] = {}; /* tracer.bpf.h */

/* The cookie of each of the tracefs events' sites (COOKIE_BY_SITE): the probe id, and
 * COOKIE_ODD_LINK where the event replaces another; written by userspace as it makes each
 * event; sized by it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, struct site_key);
	__type(value, __u64);
} probe_sites SEC(".maps");

/* The probe id (and COOKIE_ODD_LINK) of a tracefs event's hit. The kernel's dispatcher of
 * uprobe events runs the event's programs with current->utask->vaddr pointing at the probe that
 * fired (uprobe_dispatch_data: its trace_uprobe), which holds the offset probed and its event:
 * no lock taken, nothing guessed. Not inlined: its stack is not in the Python reads' chain. */
static __noinline __u64 site_lookup(void)
{
	struct uprobe_dispatch_data *udd;
	struct site_key key = {};
	struct trace_uprobe *tu;
	__u64 *site;

	udd = (void *)BPF_CORE_READ(current_task(), utask, vaddr);
	tu = BPF_CORE_READ(udd, tu);
	key.offset = BPF_CORE_READ(tu, offset);
	key.event = BPF_CORE_READ(tu, tp.event, call.event.type);
	site = bpf_map_lookup_elem(&probe_sites, &key);
	if (site)
		return *site;
	count(CNT_UNKNOWN_SITES);
	return 0xffffffffull; /* no probe: probe_cfgs has no such id */
}

/* The link's cookie, or the site's where the link is a tracefs event's (COOKIE_BY_SITE): the
 * uprobe_multi route takes no call. */
static __always_inline __u64 site_cookie(struct pt_regs *ctx)
{
	__u64 cookie = link_cookie(ctx);

	return cookie & COOKIE_BY_SITE ? site_lookup() : cookie;
}

/* Frame flags besides the probe's: pushed through a link with COOKIE_ODD_LINK; returned (the
 * slot above the top keeps the frame last popped). */
#define FRAME_ODD_LINK (1u << 30)
#define FRAME_RETURNED (1u << 31)
#define SAME_HIT_NS 50000

/* While a link is replaced by one without shed probes (record/attach.c), a hit runs both
 * programs, one after the other. The second finds what the first did: the frame it pushed (an
 * instant's, in the slot above the top) at this sp, for this probe, through the other link,
 * a moment ago. */
static __always_inline bool second_entry(const struct span_stack *st, __u64 sp, __u64 cookie,
					 __u64 now, bool instant)
{
	__u32 i = instant ? st->depth : st->depth - 1;
	const struct frame *f;

	if (i >= MAX_FRAMES)
		return false;
	f = &st->frames[i & (MAX_FRAMES - 1)];
	return f->sp == sp && f->probe_id == (__u32)cookie &&
	       !(f->flags & FRAME_ODD_LINK) != !(cookie & COOKIE_ODD_LINK) &&
	       now - f->start_ns < SAME_HIT_NS;
}

/* ... and the second return of such a hit finds the frame the first popped (sp 0: any). */
static __always_inline bool second_return(const struct span_stack *st, __u64 sp, __u64 cookie)
{
	const struct frame *f;

	if (!st || st->depth >= MAX_FRAMES)
		return false;
	f = &st->frames[st->depth & (MAX_FRAMES - 1)];
	return (f->probe_id == (__u32)cookie || (cookie & COOKIE_BY_SITE)) &&
	       (f->flags & FRAME_RETURNED) && (!sp || f->sp == sp);
}

/* The innermost frame was entered at this same stack pointer and has not returned: either this
 * entry is a tail call from it (`jmp`, not `call`), and both end at the one return, or it was
 * left behind (longjmp, a return not seen). In a tail call the return address at sp is already
 * the return probe's trampoline, the first slot of the process's uprobe area. Only this rare
 * case reads the target's memory. */
static __always_inline bool tail_call(const struct span_stack *st, __u64 sp)
{
	__u32 top = st->depth;
	struct xol_area *xol;
	__u64 ret = 0;

	if (top == 0 || top > MAX_FRAMES || st->frames[(top - 1) & (MAX_FRAMES - 1)].sp != sp)
		return false;
	xol = BPF_CORE_READ(current_task(), mm, uprobes_state.xol_area);
	if (!xol || bpf_probe_read_user(&ret, sizeof(ret), (const void *)sp))
		return false;
	return ret == BPF_CORE_READ(xol, vaddr);
}

/* One USDT argument, as its operand says: a constant, a register, or memory at a register plus
 * a displacement. The register is read from pt_regs at an offset only known at run time. */
static __always_inline __u64 usdt_arg(struct pt_regs *ctx, const struct usdt_arg_cfg *a)
{
	__u64 v = 0, reg = 0;

	if (a->kind == USDT_BPF_CONST)
		return a->val;
	if (a->reg_off > sizeof(struct pt_regs) - 8 ||
	    bpf_probe_read_kernel(&reg, sizeof(reg), (void *)ctx + a->reg_off))
		return 0;
	if (a->kind == USDT_BPF_REG)
		v = reg;
	else if (bpf_probe_read_user(&v, sizeof(v), (void *)(reg + a->val)))
		return 0;
	switch (a->size) {
	case 1:
		return a->is_signed ? (__u64)(__s64)(__s8)v : (__u8)v;
	case 2:
		return a->is_signed ? (__u64)(__s64)(__s16)v : (__u16)v;
	case 4:
		return a->is_signed ? (__u64)(__s64)(__s32)v : (__u32)v;
	}
	return v;
}

/* Reads what the probe's spec asks for, and nothing else, from the target. The six integer
 * argument registers (x86-64 SysV; libbpf 1.1 names only five) are copied to the stack first:
 * the verifier refuses a context read at a computed offset. A name at the end of a chain of
 * pointers comes from the thread's memo while it is fresh (struct name_memo). */
static __always_inline void capture_entry(struct pt_regs *ctx, const struct probe_cfg *cfg,
					  __u32 id, struct span_capture *cap,
					  struct span_stack *st, __u64 now)
{
	__u64 regs[8] = { PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx),
			  PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx), ctx->r9 };

	if ((cfg->flags & (PROBE_ARGS | PROBE_USDT)) == (PROBE_ARGS | PROBE_USDT)) {
		const struct usdt_cfg *u = bpf_map_lookup_elem(&usdt_cfgs, &id);

		for (int i = 0; i < MAX_ARGS; i++)
			cap->args[i] = 0;
		for (int i = 0; u && i < MAX_ARGS && i < cfg->nargs; i++)
			cap->args[i] = usdt_arg(ctx, &u->args[i]);
	} else if (cfg->flags & PROBE_ARGS) {
		for (int i = 0; i < MAX_ARGS; i++)
			cap->args[i] = i < cfg->nargs ? regs[cfg->arg_idx[i] & 7] : 0;
	}
	cap->ret = 0;
	cap->name[0] = 0;
	if (cfg->flags & PROBE_NAME_FROM) {
		__u64 first = regs[cfg->name_arg & 7], p = first;
		/* (objects are 16-byte aligned, and a pipeline's pads often 1 KiB apart) */
		struct name_memo *m = &st->names[(first >> 4 ^ first >> 10) & (NAME_MEMO - 1)];

		if (cfg->name_nderef && m->read_ns && m->ptr == first && m->probe_id == id &&
		    now - m->read_ns < NAME_MEMO_NS) {
			__builtin_memcpy(cap->name, m->name, sizeof(cap->name));
			return;
		}
		/* a pointer that cannot be read leaves the span unnamed (p = 0 fails the read) */
		for (int i = 0; i < MAX_NAME_DEREFS && i < cfg->name_nderef; i++)
			if (bpf_probe_read_user(&p, sizeof(p), (const void *)(p + cfg->name_deref[i])))
				p = 0;
		if (bpf_probe_read_user_str(cap->name, sizeof(cap->name), (const char *)p) < 0)
			cap->name[0] = 0;
		if (cfg->name_nderef) {
			m->ptr = first;
			m->probe_id = id;
			m->read_ns = now;
			__builtin_memcpy(m->name, cap->name, sizeof(m->name));
		}
	}
}

SEC("uprobe")
int BPF_KPROBE(span_enter)
{
	__u64 sp = PT_REGS_SP(ctx);
	__u64 cookie, now;
	__u32 id;
	const struct probe_cfg *cfg;
	struct span_stack *st;
	struct frame *f;
	__u32 d;

	if (phase >= PHASE_DETACHING || !traced_process(true))
		return 0;
	cookie = site_cookie(ctx);
	now = bpf_ktime_get_ns();
	id = cookie;
	cfg = bpf_map_lookup_elem(&probe_cfgs, &id);
	if (!cfg || (cfg->flags & PROBE_SHED))
		return 0;
	/* A wait's start is read again, between the stamp's pending and its value: a tick's read
	 * in the lookup above, unstamped and after the start, began the frames new in it inside
	 * the wait (6.1 emulated: 834 us there, a vCPU held; test_python_launch_mode's overlaps
	 * in 11 of 60 runs). (The slot and tid are read again at the end: 6.1's stack limit.) */
	if (cfg->flags & PROBE_PY_WAIT)
		now = py_stamp_end(true);
	st = current_storage(&stacks, true);
	if (!st) {
		count(CNT_NO_STORAGE);
		goto out;
	}
	if (!st->tid) {
		__u64 pid_tgid = bpf_get_current_pid_tgid();

		st->tid = (__u32)pid_tgid;
		st->pid = pid_tgid >> 32;
	}
	/* A wait inside the interpreter: a tick's read between its start and its push would find
	 * the stack without it and stamp it later than that start (uprobe programs take
	 * interrupts: seen on 6.1, emulated, 1.7 ms into it), the frames new in it starting
	 * inside the wait. Reads from here on are stamped with its start (py_read). */
	if (cfg->flags & PROBE_PY_WAIT)
		*(volatile __u64 *)&st->entering_ns = now;
	if (second_entry(st, sp, cookie, now, cfg->flags & PROBE_ENTRY_ONLY))
		goto out;
	/* The Python line that called this native function: read first, and at the span's own
	 * start, so that no other read of this thread can come between them. */
	if (py_active && !(cfg->flags & PROBE_PY_WAIT)) {
		__u64 t = py_read(0, PY_READ_PROBE, sp, outer_native_call(st, sp));

		if (t)
			now = t;
	}
	/* frames at this stack pointer or below have returned unseen, or an exception unwound
	 * them; unless this is a tail call */
	close_stale(st, tail_call(st, sp) ? sp - 1 : sp, now, 0);
	/* loaded again, not the value close_stale compared: where it found more than MAX_FRAMES,
	 * 6.1's verifier follows the d < MAX_FRAMES branch too, with a range it cannot hold
	 * (min 65, max 63), and takes &st->frames[d] for a scalar */
	d = *(volatile __u32 *)&st->depth;
	if (d >= MAX_FRAMES) {
		count(CNT_DEEP_FRAMES);
		goto out;
	}
	f = &st->frames[d];
	f->start_ns = now;
	f->sp = sp;
	f->probe_id = id;
	f->flags = cfg->flags | (cookie & COOKIE_ODD_LINK ? FRAME_ODD_LINK : 0);
	if (cfg->flags & (PROBE_NAME_FROM | PROBE_ARGS | PROBE_RET))
		capture_entry(ctx, cfg, id, &f->cap, st, now);
	/* No return probe (Go, stack switching, --entry-only): the call is an instant. The frame
	 * slot is only scratch space; the stack does not grow. */
	if (cfg->flags & PROBE_ENTRY_ONLY) {
		submit_frame(st, f, d, now, SPAN_INSTANT);
		goto out;
	}
	st->depth = d + 1;
out:
	asm volatile("" ::: "memory"); /* the frame is in place before reads resume */
	if (st)
		*(volatile __u64 *)&st->entering_ns = 0;
	if (cfg->flags & PROBE_PY_WAIT)
		py_unstamp_reads();
	return 0;
}

/* A return of a call whose entry was ignored because its probe is being shed: expected. */
static __always_inline bool shed_probe(__u32 id)
{
	const struct probe_cfg *cfg = bpf_map_lookup_elem(&probe_cfgs, &id);

	return cfg && (cfg->flags & PROBE_SHED);
}

/* A call of the innermost frame ends: entered at stack pointer entry_sp, by the probe whose id
 * is the cookie's; any probe's when it is a return of a tracefs event (COOKIE_BY_SITE: a return
 * address says nothing of the function), the stack pointer alone then telling the call. */
static __always_inline int end_call(struct pt_regs *ctx, __u64 entry_sp, __u64 now, __u64 cookie)
{
	struct span_stack *st;
	struct frame *f;
	__u32 top;

	/* the recording has ended (record/finish.c): calls still open end at its end, read from
	 * task storage */
	if (phase == PHASE_DETACHING || !traced_process(false))
		return 0;
	st = current_storage(&stacks, false);
	if (!st)
		goto unmatched;
	close_stale(st, entry_sp - 1, now, 0);
	top = st->depth;
	if (top == 0 || top > MAX_FRAMES)
		goto unmatched;
	top = (top - 1) & (MAX_FRAMES - 1);
	f = &st->frames[top];
	if (f->sp != entry_sp || (f->probe_id != (__u32)cookie && !(cookie & COOKIE_BY_SITE)))
		goto unmatched;
	if (f->flags & PROBE_RET)
		f->cap.ret = PT_REGS_RC(ctx);
	if (f->flags & PROBE_PY_WAIT) {
		if (now - f->start_ns < PY_WAIT_MIN_NS) {
			count(CNT_SHORT_PY_WAITS);
			f->flags |= FRAME_RETURNED;
			st->depth = top;
			return 0;
		}
		if (py_active) /* stamped with the wait's start: see py_read */
			py_read(0, PY_READ_WAIT, 0, 0);
	}
	emit_span(st, top, now, 0);
	f->flags |= FRAME_RETURNED;
	st->depth = top;
	return 0;
unmatched:
	if (phase == PHASE_RECORDING && ((cookie & COOKIE_BY_SITE) || !shed_probe(cookie)) &&
	    !second_return(st, entry_sp, cookie))
		count(CNT_UNMATCHED_RETS);
	return 0;
}

/* end_call at the clock's time now, with this thread's Python reads meanwhile stamped with
 * it (tracer.bpf.h: py_stamp_end): the span reaches the ring after them. */
static __always_inline int end_call_now(struct pt_regs *ctx, __u64 entry_sp, __u64 cookie)
{
	bool py = py_active;
	__u64 now = py_stamp_end(py);

	end_call(ctx, entry_sp, now, cookie);
	if (py)
		py_unstamp_reads();
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(span_exit)
{
	/* After `ret` the stack pointer is 8 above where it was at entry. */
	return end_call_now(ctx, PT_REGS_SP(ctx) - 8, link_cookie(ctx));
}

/* Whether the jcc of condition code cc jumps with these flags (x86: the even codes test a
 * condition, the odd ones its negation). */
static __always_inline bool jcc_taken(__u64 flags, __u32 cc)
{
	bool cf = flags & 1, pf = flags & (1 << 2), zf = flags & (1 << 6), sf = flags & (1 << 7),
	     of = flags & (1 << 11), t;

	switch (cc >> 1) {
	case 0: t = of; break;
	case 1: t = cf; break;
	case 2: t = zf; break;
	case 3: t = cf || zf; break;
	case 4: t = sf; break;
	case 5: t = pf; break;
	case 6: t = sf != of; break;
	default: t = zf || sf != of; break;
	}
	return t != (cc & 1);
}

/* On a function's own `ret` or tail jump (probe/resolve.h: exits), where C++ exceptions unwind
 * through it: the stack pointer is the one at its entry, and no return address is touched. At
 * a `ret` the return value is in rax already; at a tail jump it is not known yet (rax is
 * whatever it holds then). An exit moved back from its `ret` (EXIT_*: the stack protector's
 * jcc before it, most often) finds that stack pointer from the registers at its site; at a
 * jcc, only the way that falls through to the `ret` ends the call. */
SEC("uprobe")
int BPF_KPROBE(span_exit_at)
{
	/* (a tracefs event's hit: the site's own cookie, read from probe_sites) */
	__u64 cookie = site_cookie(ctx), sp = PT_REGS_SP(ctx), fp = PT_REGS_FP(ctx);

	if ((cookie & EXIT_IF_NOT_TAKEN) &&
	    jcc_taken(((struct pt_regs *)ctx)->flags, (cookie >> EXIT_CC_SHIFT) & 15))
		return 0;
	/* both read as they are: a choice of the offset into ctx is refused */
	barrier_var(sp);
	barrier_var(fp);
	if (cookie & EXIT_FROM_RBP)
		sp = fp;
	return end_call_now(ctx, sp + (__s16)(cookie >> EXIT_SP_SHIFT), cookie);
}

/* A C++ exception's way (record/exception_hooks.h): thrown (the cookie is EXC_THROW: the
 * unwinder's entry points), then caught (EXC_CATCH: __cxa_begin_catch). While it is in flight,
 * the calls it unwinds end, marked, when the thread is next seen above them (a destructor's
 * probed call, the catch). */
SEC("uprobe")
int BPF_KPROBE(on_exception)
{
	struct span_stack *st = current_storage(&stacks, false);
	__u64 now;
	bool py;

	if (!st || !st->depth || phase == PHASE_DETACHING)
		return 0;
	/* (a tracefs event's hook, on kernels without uprobe_multi: its site says which) */
	if (site_cookie(ctx) == EXC_THROW) {
		st->in_flight = 1;
		return 0;
	}
	py = py_active;
	now = py_stamp_end(py);
	close_stale(st, PT_REGS_SP(ctx), now, SPAN_EXCEPTION);
	if (py)
		py_unstamp_reads();
	st->in_flight = 0;
	return 0;
}

/* The end of a USDT pair (python:gc__start ... python:gc__done): the cookie is the start's
 * probe id; the innermost frame, if it is that start's, completes. */
static __always_inline void end_usdt_pair(struct pt_regs *ctx, __u64 now)
{
	struct span_stack *st;
	__u64 cookie;
	__u32 top;

	if (phase == PHASE_DETACHING || !traced_process(false))
		return;
	cookie = site_cookie(ctx);
	st = current_storage(&stacks, false);
	if (!st)
		goto unmatched;
	top = st->depth;
	if (top == 0 || top > MAX_FRAMES)
		goto unmatched;
	top = (top - 1) & (MAX_FRAMES - 1);
	if (st->frames[top].probe_id != (__u32)cookie)
		goto unmatched;
	emit_span(st, top, now, 0);
	st->frames[top].flags |= FRAME_RETURNED;
	st->depth = top;
	return;
unmatched:
	if (phase == PHASE_RECORDING && !second_return(st, 0, cookie))
		count(CNT_UNMATCHED_RETS);
}

SEC("uprobe")
int BPF_KPROBE(usdt_end)
{
	bool py = py_active;
	__u64 now = py_stamp_end(py);

	end_usdt_pair(ctx, now);
	if (py)
		py_unstamp_reads();
	return 0;
}

/* On the launched command's ELF entry point: its libraries are mapped, none of its own code
 * has run. Stop it there until every probe is attached. */
SEC("uprobe")
int BPF_KPROBE(stop_at_entry)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	/* a followed exec (the launched command's own too: `sh -c 'exec prog'`): userspace
	 * attaches to the new program, then resumes it */
	if (bpf_map_delete_elem(&stop_pids, &tgid) == 0) {
		task_event(current_task(), NULL, TASK_AT_ENTRY, current_task()->comm);
		bpf_send_signal(19 /* SIGSTOP */);
	} else if (tgid == launch_pid) {
		bpf_send_signal(19 /* SIGSTOP */);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
