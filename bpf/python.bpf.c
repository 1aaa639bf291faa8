// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Python frames: the current thread's interpreter stack, read through _PyRuntime -> interpreter
 * -> thread state (matched by native_thread_id) -> current frame -> previous ..., when the thread
 * leaves the CPU, on a periodic on-CPU tick, and when it enters a probed native function
 * (spans.bpf.c). Userspace names the code objects and turns the reads into spans. */
#include "tracer.bpf.h"
#include "python.bpf.h"

#define PY_MAX_INTERPS 4
#define PY_MAX_THREADS 256
/* A thread with no Python thread state found is looked for again after PY_RETRY_FIRST_NS while
 * it is younger than PY_YOUNG_NS (a new thread binds its state a moment after it starts, later
 * on a loaded machine: a read before that left it unread for 10 ms), then twice as long each
 * time up to PY_RETRY_NS (a native thread of a Python process never has one). */
#define PY_RETRY_FIRST_NS (250 * 1000ULL)
#define PY_RETRY_NS (10 * 1000 * 1000ULL)
#define PY_YOUNG_NS (50 * 1000 * 1000ULL)

volatile __u32 py_active = 0;
/* Zero, but not to the verifier: .bss may be written, so what it holds is unknown. Kernels
 * before 6.7 (Debian 12's 6.1) verify a bpf_loop callback for one call, from the context as the
 * caller filled it, and drop the branches that call could not take: with find_ctx.tstate a
 * known 0, find_step lost its thread-id match and no thread state was ever found (every
 * Python read came back empty). The context fields a callback branches on start from this. */
volatile __u64 py_opaque_zero = 0;

/* Processes running a known interpreter, by tgid: written by userspace at attach, copied to
 * children at fork (they share the parent's memory layout). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct py_proc_cfg);
} py_procs SEC(".maps");

/* Per thread: its thread state, what the last submitted read found on top, and where a read is
 * built before it is copied to the ring with only the frames it has. The record is the
 * thread's own, not the CPU's: a uprobe program (a probe hit's read) runs preemptible, with
 * only migration disabled, so a per-CPU record could be half-built when another thread's read
 * on the same CPU (its probe hit, a switch, a tick) overwrote it. A read that interrupts one
 * of the same thread waits (busy). */
/* Where read_frame reads a frame, and then a name: the thread's, not the stack (6.1 allows the
 * chain span_enter, py_read, walk_step (a bpf_loop callback counts) and read_frame 512 bytes of
 * stack together; it refused 544). */
#define PY_READ_WORDS (PY_READ_MAX / 8)
#define PY_NL_UNKNOWN 0xff
/* A code object the thread ran, by its address: its name's fingerprint and its count of
 * locals, taken again for as long as the code there still has that name (one read instead of
 * three when a frame at a depth is not the one the last read found there: a thread going
 * back and forth between a few functions). */
#define PY_CODE_MEMO 32
struct py_code_memo {
	__u64 code, name, name_fp;
	__u64 nlocals; /* PY_NL_UNKNOWN: not read (the innermost frame's are not) */
};
struct py_words {
	/* the frame's fields, then (3.11 on, where its first locals follow them) those locals */
	__u64 w[PY_READ_WORDS];
	/* per depth of the stack: how many locals its frame's code has (at most
	 * PY_LOCALS_HASHED), while the code there is the one the thread's last read found
	 * (struct py_frame.code); PY_NL_UNKNOWN: not read */
	__u8 nlocals[PY_MAX_FRAMES];
	__u32 want; /* 0: the innermost frame, whose locals tell nothing (it calls nothing) */
	__u32 at;   /* the depth being read */
	struct py_code_memo memo[PY_CODE_MEMO];
};
_Static_assert(PY_FRAME_READ + PY_LOCALS_HASHED * 8 <= PY_READ_WORDS * 8, "py_words.w");

struct py_thread {
	__u64 tstate;
	__u64 retry_ns;	 /* tstate == 0: when to look for it again */
	__u64 retry_gap; /* the wait before that retry */
	__u64 stack_hash; /* of the last submitted read's frames (stack_step) */
	/* the last probe hit's read (PY_READ_PROBE): its call's stack pointer (0: none, or the
	 * read failed), its innermost frame (stack_step) and the whole stack's hash */
	__u64 probe_sp, probe_top, probe_hash;
	__u64 woke_ns;	 /* when it last woke another thread */
	__u32 submitted; /* a read was submitted since the thread was first seen */
	__u32 busy;	 /* a read is under way: one that interrupts it (tick, switch) waits */
	struct py_words scratch;
	struct py_stack_rec rec;
};

/* (the compat object reads no frames: one entry, never used) */
struct {
	TASK_STORAGE(struct py_thread, 1);
} py_threads SEC(".maps");

#ifndef TRACER_COMPAT
static __always_inline __u64 read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

struct find_ctx {
	const struct py_proc_cfg *cfg;
	__u64 interp;
	__u64 tstate; /* the one to look at next */
	__u64 found;
	__u64 key; /* what the thread's state holds at tstate_match (thread_key) */
	__u32 interps;
};

/* What a thread state names its thread by: the kernel tid (native_thread_id), or before 3.11
 * pthread_self() (thread_id), which glibc makes the thread's TLS base: the FS base on x86-64,
 * TPIDR_EL0 on arm64. */
static __always_inline __u64 thread_key(const struct py_proc_cfg *cfg, __u32 tid)
{
	struct task_struct *t;

	if (!(cfg->flags & PY_CFG_PTHREAD))
		return tid;
	t = bpf_get_current_task_btf();
#if defined(__TARGET_ARCH_x86)
	return t->thread.fsbase;
#elif defined(__TARGET_ARCH_arm64)
	return t->thread.uw.tp_value;
#else
	return 0;
#endif
}

/* One step of the walk over every interpreter's thread list (bpf_loop: verified once). The
 * last match wins: 3.11 creates a new thread's state in the thread that starts it, with that
 * thread's ids, at the head of the list, until the new thread runs and puts in its own. */
static long find_step(__u32 i, struct find_ctx *c)
{
	const struct py_proc_cfg *cfg = c->cfg;

	if (!c->tstate) {
		/* the count stops at the bound: the verifier, which does not know that returning 1
		 * ends the loop, sees finitely many states */
		if (!c->interp || c->interps >= PY_MAX_INTERPS)
			return 1;
		c->interps++;
		c->tstate = read_ptr(c->interp + cfg->interp_threads_head);
		c->interp = read_ptr(c->interp + cfg->interp_next);
		return 0;
	}
	if (read_ptr(c->tstate + cfg->tstate_match) == c->key)
		c->found = c->tstate;
	c->tstate = read_ptr(c->tstate + cfg->tstate_next);
	return 0;
}

/* A global function: its loop is verified once, not on each path of its callers. */
__noinline __u64 find_tstate(const struct py_proc_cfg *cfg, __u64 key)
{
	/* opaque zeros: 6.1 verifies a bpf_loop callback for the first call's state only, and
	 * with known zeros would drop the branches a later call takes */
	struct find_ctx c = { .cfg = cfg, .key = key, .tstate = py_opaque_zero,
			      .interps = py_opaque_zero };

	if (!cfg)
		return 0;

	c.interp = read_ptr(cfg->runtime + cfg->runtime_interp_head);
	bpf_loop(PY_MAX_INTERPS * (PY_MAX_THREADS + 1), find_step, &c, 0);
	return c.found;
}

/* The thread's state: the cached one while it still names this thread, else looked up. A
 * thread inside an interpreter wait (PY_READ_WAIT: taking the GIL back) has one for sure: it is
 * looked up whatever the last miss, which may have come before the thread put its own id into
 * its state (3.11 creates it with its creator's): the first waits of a new thread lost their
 * stack to the retry interval. So is a young thread at a probe hit: a miss as it started (a
 * switch before it bound its state) left its first native calls, a moment later, with no
 * Python caller (1 run in 12 under load); a native thread pays the walk only while young. */
static __always_inline __u64 thread_state(const struct py_proc_cfg *cfg, struct py_thread *th,
					  __u32 tid, __u64 now, __u32 reason, __u64 *frame)
{
	__u64 key = thread_key(cfg, tid);
	bool young;

	if (!key)
		return 0;
	/* its id and its current frame in one read, when they lie that close (3.8 on) */
	if (th->tstate && cfg->tstate_span) {
		__u64 n = cfg->tstate_span;

		barrier_var(n); /* the bound on the register the helper gets */
		if (n <= sizeof(th->scratch.w) &&
		    !bpf_probe_read_user(th->scratch.w, n,
					 (const void *)(th->tstate + cfg->tstate_lo)) &&
		    th->scratch.w[(cfg->tstate_match - cfg->tstate_lo) / 8 &
				  (PY_READ_WORDS - 1)] == key) {
			*frame = th->scratch.w[(cfg->tstate_frame - cfg->tstate_lo) / 8 &
					       (PY_READ_WORDS - 1)];
			return th->tstate;
		}
	} else if (th->tstate && read_ptr(th->tstate + cfg->tstate_match) == key) {
		*frame = read_ptr(th->tstate + cfg->tstate_frame);
		return th->tstate;
	}
	young = now - bpf_get_current_task_btf()->start_time < PY_YOUNG_NS;
	if (!th->tstate && now < th->retry_ns && reason != PY_READ_WAIT &&
	    !(young && reason == PY_READ_PROBE))
		return 0;
	th->tstate = find_tstate(cfg, key);
	if (th->tstate) {
		th->retry_gap = 0;
		*frame = read_ptr(th->tstate + cfg->tstate_frame);
		return th->tstate;
	}
	th->retry_gap = th->retry_gap && !young ? th->retry_gap * 2 : PY_RETRY_FIRST_NS;
	if (th->retry_gap > PY_RETRY_NS)
		th->retry_gap = PY_RETRY_NS;
	th->retry_ns = now + th->retry_gap;
	return 0;
}

/* The str's length and first characters lie within 40 bytes (userspace checks it): one read,
 * into w, the frame's words read_frame is done with (5 of them). */
static __always_inline __u64 name_fp(const struct py_proc_cfg *cfg, __u64 str, __u64 *w)
{
	__u64 i = (cfg->str_ascii_data - cfg->str_length) / 8;

	barrier_var(i); /* the bound below on the register the load uses, not on a copy */
	if (!str || i >= 5 ||
	    bpf_probe_read_user(w, 5 * sizeof(*w), (const void *)(str + cfg->str_length)))
		return 0;
	return py_name_fp(w[0], w[i]);
}

/* 0: a Python frame read into out; 1: an entry shim of the C stack (3.12 on), not a Python
 * function: only *previous is set; -1: unreadable. A global function: verified once, not at
 * each of its callers' paths. Shims are the owners from owner_cstack on: 3.14 put its
 * interpreter's entry frames, FRAME_OWNED_BY_INTERPRETER, at 3.13's FRAME_OWNED_BY_CSTACK (3),
 * and moved that to 4, so 3.13's value covers both.
 * A caller's frame, the same code at its depth as at the last read, costs one read: its
 * fields and (3.11 on) its first locals right after them, as many as the code has. */
__noinline int read_frame(const struct py_proc_cfg *cfg, __u64 frame, struct py_frame *out,
			  __u64 *previous, struct py_words *scr)
{
	__u64 n, loc = 0, first = 0, code, h, name = 0;
	struct py_code_memo *m = NULL;
	__u32 nl, at;
	bool fresh, known = false;

	if (!cfg || !out || !previous || !scr)
		return -1;
	at = scr->at & (PY_MAX_FRAMES - 1);
	n = cfg->frame_read;
	nl = scr->nlocals[at];
	if (scr->want && cfg->frame_locals_at && nl <= PY_LOCALS_HASHED) {
		loc = cfg->frame_locals_at & (PY_FRAME_READ * 2 - 1);
		if (loc + nl * 8 > n)
			n = loc + nl * 8;
	}
	barrier_var(n); /* the bound on the register the helper gets */
	if (!n || n > sizeof(scr->w) ||
	    bpf_probe_read_user(scr->w, n, (const void *)(frame + cfg->frame_base))) {
		/* the count was another code's, more than this frame holds: its fields alone */
		n = cfg->frame_read;
		loc = 0;
		barrier_var(n);
		if (!n || n > PY_FRAME_READ ||
		    bpf_probe_read_user(scr->w, n, (const void *)(frame + cfg->frame_base)))
			return -1;
	}
	*previous = scr->w[(cfg->frame_previous / 8) & (PY_READ_WORDS - 1)];
	if ((cfg->flags & PY_CFG_OWNER) &&
	    ((__u8 *)scr->w)[cfg->frame_owner & (PY_FRAME_READ - 1)] >= cfg->owner_cstack)
		return 1;
	code = scr->w[(cfg->frame_code / 8) & (PY_READ_WORDS - 1)];
	out->instr = scr->w[(cfg->frame_prev_instr / 8) & (PY_READ_WORDS - 1)];
	/* out holds what the thread's last read found at this depth: the same code there still
	 * has the name it had (the stack is read at each tick; a code object freed and another
	 * made at its address in between fails the fingerprint, and goes unnamed), and the same
	 * count of locals */
	fresh = code != out->code || !out->name;
	if (fresh) {
		m = &scr->memo[(code ^ code >> 9) / 16 & (PY_CODE_MEMO - 1)];
		name = code ? read_ptr(code + cfg->code_qualname) : 0;
		known = name && m->code == code && m->name == name;
		nl = scr->nlocals[at] = known ? m->nlocals : PY_NL_UNKNOWN;
	}
	/* the first locals: a caller's do not move while its callee runs (struct py_frame) */
	out->locals = 0;
	if (scr->want && code && nl == PY_NL_UNKNOWN) {
		nl = 0;
		if (!bpf_probe_read_user(&nl, sizeof(nl), (const void *)(code + cfg->code_nlocals))) {
			if (nl > PY_LOCALS_HASHED)
				nl = PY_LOCALS_HASHED;
			scr->nlocals[at] = nl;
		}
	}
	if (scr->want && code && nl && nl <= PY_LOCALS_HASHED) {
		if (loc && loc + nl * 8 <= n) {
			first = loc / 8;
		} else {
			n = nl * 8;
			barrier_var(n); /* the bound on the register the helper gets */
			if (n > PY_LOCALS_HASHED * 8 ||
			    bpf_probe_read_user(scr->w, n,
						(const void *)(frame + cfg->frame_localsplus)))
				nl = 0;
		}
		h = nl;
		for (int i = 0; i < PY_LOCALS_HASHED; i++)
			if (i < nl)
				h = (h ^ scr->w[(first + i) & (PY_READ_WORDS - 1)]) *
				    0x9e3779b97f4a7c15ULL;
		out->locals = nl ? h : 0;
	}
	if (fresh) {
		out->code = code;
		out->name = name;
		if (known) {
			out->name_fp = m->name_fp;
			if (scr->nlocals[at] != PY_NL_UNKNOWN)
				m->nlocals = scr->nlocals[at];
		} else {
			/* the frame's words are hashed: they take the name */
			out->name_fp = name_fp(cfg, name, scr->w);
			m->code = code;
			m->name = name;
			m->name_fp = out->name_fp;
			m->nlocals = scr->nlocals[at];
		}
	}
	return 0;
}

/* One frame into a read's identity: where it is, what runs, where, and its locals. */
static __always_inline __u64 stack_step(__u64 h, __u64 frame, const struct py_frame *f)
{
	h = (h ^ frame) * 0x9e3779b97f4a7c15ULL;
	h = (h ^ f->code) * 0x9e3779b97f4a7c15ULL;
	h = (h ^ f->instr) * 0x9e3779b97f4a7c15ULL;
	return (h ^ f->locals) * 0x9e3779b97f4a7c15ULL;
}

struct walk_ctx {
	const struct py_proc_cfg *cfg;
	struct py_stack_rec *rec;
	struct py_words *scr;
	__u64 frame; /* the next one to read; 0 at the end of the stack */
	__u64 hash;  /* stack_step over the frames read */
	__u32 depth;
	bool fault;
};

static long walk_step(__u32 i, struct walk_ctx *w)
{
	struct py_frame *f;
	__u64 next = 0;
	int ret;

	if (!w->frame || w->depth >= PY_MAX_FRAMES)
		return 1;
	f = &w->rec->frames[w->depth & (PY_MAX_FRAMES - 1)];
	w->scr->at = w->depth;
	ret = read_frame(w->cfg, w->frame, f, &next, w->scr);
	if (ret < 0) {
		w->fault = true;
		w->frame = 0;
		return 1;
	}
	if (!ret) {
		w->hash = stack_step(w->hash, w->frame, f);
		w->depth++;
	}
	w->frame = next;
	return 0;
}

/* Whether the current thread, leaving the CPU to wait, waits to take the GIL: it is in futex()
 * on the GIL's cond or mutex (glibc's pthread_cond_wait waits on a word inside the cond). Its
 * syscall and first argument are in the user registers saved at the syscall's entry: no read
 * of the target's memory but the GIL's address from 3.12 on (two pointers). */
static __always_inline bool gil_wait(const struct py_proc_cfg *cfg)
{
	struct pt_regs *regs;
	__u64 uaddr, gil;

	if (!cfg->gil_hi)
		return false;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs)
		return false;
#if defined(__TARGET_ARCH_x86)
	if (regs->orig_ax != 202 /* futex */)
		return false;
	uaddr = regs->di;
#elif defined(__TARGET_ARCH_arm64)
	if (regs->syscallno != 98 /* futex */)
		return false;
	uaddr = regs->orig_x0;
#else
	return false;
#endif
	gil = cfg->runtime + cfg->gil_at;
	/* the main interpreter's (the list's head while there is one) */
	if (cfg->flags & PY_CFG_GIL_INTERP)
		gil = read_ptr(read_ptr(cfg->runtime + cfg->runtime_interp_head) + cfg->gil_at);
	return gil && uaddr >= gil + cfg->gil_lo && uaddr < gil + cfg->gil_hi;
}

static __always_inline int read_stack(__u64 ts, __u64 now, __u32 reason, __u64 sp, __u64 outer_sp,
				      const struct py_proc_cfg *cfg, __u32 tgid,
				      struct py_thread *th)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct py_stack_rec *rec = &th->rec;
	/* the innermost frame is read into the record (the thread's own): not on the stack */
	struct py_frame *top = &rec->frames[0];
	__u64 tstate, frame, next = 0, hash = 0, top_h = 0;
	__u32 depth = 0, flags = 0;
	void *ring;
	__u64 size;
	int ret;

	count(CNT_PY_CHECKS);
	tstate = thread_state(cfg, th, tid, ts, reason, &frame);
	if (!tstate)
		return 0;
	if (cfg->flags & PY_CFG_CFRAME)
		frame = read_ptr(frame + cfg->cframe_current_frame);
	/* an entry shim on top (a C call into Python just began or ends): the stack below it */
	th->scratch.want = 0;
	th->scratch.at = 0;
	ret = frame ? read_frame(cfg, frame, top, &next, &th->scratch) : 0;
	if (ret > 0) {
		frame = next;
		ret = frame ? read_frame(cfg, frame, top, &next, &th->scratch) : 0;
	}
	if (ret) {
		/* not an empty stack: a stack that could not be read (userspace skips it) */
		flags = PY_FAULT;
		frame = 0;
		count(CNT_PY_FAULTS);
		th->submitted = 0;
		goto submit;
	}
	if (frame)
		top_h = stack_step(0, frame, top);
	/* A hit nested in a probed native call (outer_sp), or a switch or tick inside one, whose
	 * entry read the stack, found the same innermost frame at the same instruction: that
	 * frame made the call and cannot run until it returns, nor the frames below it; a
	 * callback's frames would be above it, and any read since that changed the stack changed
	 * its hash. The walk would find the same stack: left out, a few reads instead of a few
	 * per frame. */
	if (outer_sp && outer_sp == th->probe_sp && top_h && top_h == th->probe_top &&
	    th->submitted && th->stack_hash == th->probe_hash) {
		flags = PY_SAME;
		goto submit;
	}
	if (frame) {
		hash = top_h;
		depth = 1;
		frame = next;
	}
	if (frame) {
		struct walk_ctx w = { .cfg = cfg, .rec = rec, .scr = &th->scratch, .frame = frame,
				      .hash = hash, .depth = 1 };

		th->scratch.want = 1;
		bpf_loop(PY_MAX_FRAMES - 1, walk_step, &w, 0);
		depth = w.depth;
		frame = w.frame;
		hash = w.hash;
		if (w.fault) {
			flags |= PY_FAULT;
			count(CNT_PY_FAULTS);
		}
	}
	if (frame) {
		flags |= PY_TRUNCATED;
		count(CNT_PY_TRUNCATED);
	}
	/* Every frame where it was, at the same instruction, each caller's locals unchanged: the
	 * same calls, only the time is news. The whole stack, not its innermost frames: a loop
	 * calling stage() that calls sleep() shows the same two frames at each call; its own
	 * variable moved on. (An empty stack leaves the record's frames as they were.) */
	if (!(flags & PY_FAULT) && th->submitted && hash == th->stack_hash) {
		flags = PY_SAME;
		depth = 0;
	} else {
		th->submitted = !(flags & PY_FAULT);
		th->stack_hash = hash;
	}
	/* what the hits nested in the call now entered compare with (above) */
	if (reason == PY_READ_PROBE) {
		th->probe_sp = flags & PY_FAULT ? 0 : sp;
		th->probe_top = top_h;
		th->probe_hash = hash;
	}
submit:
	if (reason == PY_READ_BLOCK && gil_wait(cfg))
		flags |= PY_GIL;
	if (reason == PY_READ_PREEMPT && now - th->woke_ns <= PY_WOKE_NS)
		flags |= PY_WOKE;
	rec->type = REC_PY_STACK;
	rec->reason = reason;
	rec->pid = tgid;
	rec->tid = tid;
	rec->ts = ts;
	rec->now_ns = now;
	rec->depth = depth;
	rec->flags = flags;
	size = offsetof(struct py_stack_rec, frames) + (__u64)depth * sizeof(struct py_frame);
	barrier_var(size); /* bound the value the helper gets, not a copy the compiler made */
	if (size > sizeof(*rec))
		size = sizeof(*rec);
	ring = cpu_ring();
	if (!ring || bpf_ringbuf_output(ring, rec, size, BPF_RB_NO_WAKEUP)) {
		count(CNT_LOST_PY);
		/* the next read must not be taken for "unchanged" */
		th->submitted = 0;
		return 0;
	}
	/* reads that changed (CNT_PY_READS): counted by the reader */
	return 0;
}

__hidden __u64 py_read(__u64 ts, __u32 reason, __u64 sp, __u64 outer_sp)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, key = CNT_PY_NS, pe;
	const struct py_proc_cfg *cfg;
	struct span_stack *st;
	struct py_thread *th;
	__u64 *ns, took, at, stamp = 0;

	if (!py_active || phase >= PHASE_DETACHING) /* paused, or the recording ended */
		return 0;
	cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!cfg)
		return 0;
	/* (a switch's read: on_switch checks) */
	if (reason >= PY_READ_TICK)
		switch_in_check();
	th = bpf_task_storage_get(&py_threads, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!th) {
		count(CNT_NO_STORAGE);
		return 0;
	}
	/* Uprobe programs run with interrupts on and may be preempted: a tick or a switch can
	 * land in the middle of a probe hit's read. Its read would reach the ring first with a
	 * later time; the stack is the same anyway, so it is left out. */
	if (th->busy)
		return 0;
	th->busy = 1;
	at = ts ? ts : bpf_ktime_get_ns();
	ts = at;
	/* Inside a wait of the interpreter's own (a lock, the GIL taken back) the stack is what it
	 * was when the wait began: stamped so, what changed before the wait is not taken to have
	 * changed during it; and so while its entry is being pushed (spans.bpf.c span_enter).
	 * Inside a program that ends a call, the stack is the one it returned to, at its end. */
	st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	if (st && *(volatile __u64 *)&st->entering_ns)
		ts = *(volatile __u64 *)&st->entering_ns;
	else if (st && st->depth > 0 && st->depth <= MAX_FRAMES &&
	    (st->frames[(st->depth - 1) & (MAX_FRAMES - 1)].flags & PROBE_PY_WAIT))
		ts = st->frames[(st->depth - 1) & (MAX_FRAMES - 1)].start_ns;
	else if (py_stamp_tid[pe = py_stamp_here()] == (__u32)bpf_get_current_pid_tgid() &&
		 (stamp = *(volatile __u64 *)&py_stamp_ns[pe]))
		ts = stamp;
	/* a switch or tick inside a probed native call: its entry's read may still stand
	 * (read_stack) */
	if (reason < PY_READ_PROBE && st) {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

		outer_sp = regs ? outer_native_call(st, PT_REGS_SP_CORE(regs)) : 0;
	}
	/* (a call's end not read yet: this read would come first with a later time) */
	if (stamp != PY_STAMP_PENDING)
		read_stack(ts, at, reason, sp, outer_sp, cfg, tgid, th);
	th->busy = 0;
	/* what reading cost the thread, from the caller's clock reading to now */
	took = bpf_ktime_get_ns() - at;
	ns = bpf_map_lookup_elem(&counters, &key);
	if (ns)
		__sync_fetch_and_add(ns, took); /* atomic: see count() */
	key = CNT_PY_PROBE_NS;
	ns = reason >= PY_READ_PROBE ? bpf_map_lookup_elem(&counters, &key) : NULL;
	if (ns)
		__sync_fetch_and_add(ns, took);
	return ts;
}

__hidden void py_woke(__u64 now)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct py_thread *th;

	if (!py_active || !bpf_map_lookup_elem(&py_procs, &tgid))
		return;
	th = bpf_task_storage_get(&py_threads, bpf_get_current_task_btf(), 0, 0);
	if (th)
		th->woke_ns = now;
}
#else
/* Kernels before 5.17 (the compat object): no bpf_loop, no frames read (userspace says so in
 * the summary, and loads none of the programs below). */
__hidden __u64 py_read(__u64 ts, __u32 reason, __u64 sp, __u64 outer_sp)
{
	return 0;
}

__hidden void py_woke(__u64 now)
{
}
#endif

/* The thread leaving the CPU is still current here: its stack is exact until it runs again. */
SEC("tp_btf/sched_switch")
int BPF_PROG(py_on_switch, SWITCH_ARGS)
{
	py_read(bpf_ktime_get_ns(), preempt || !PREV_STATE ? PY_READ_PREEMPT : PY_READ_BLOCK, 0,
		0);
	return 0;
}

/* A software cpu-clock event on each CPU, at --py-rate: whatever thread it interrupts. */
SEC("perf_event")
int py_on_tick(struct bpf_perf_event_data *ctx)
{
	py_read(bpf_ktime_get_ns(), PY_READ_TICK, 0, 0);
	return 0;
}

/* A forked process shares its parent's memory layout: it runs the same interpreter at the same
 * addresses (an exec replaces it: userspace deletes the entry then). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(py_on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	const struct py_proc_cfg *cfg;

	if (!follow || child->pid != child->tgid)
		return 0;
	cfg = bpf_map_lookup_elem(&py_procs, &ptgid);
	if (cfg)
		bpf_map_update_elem(&py_procs, &ctgid, cfg, BPF_ANY);
	return 0;
}

/* A new program replaces the interpreter: nothing of it is where it was (userspace looks at the
 * new program when it reaches its entry point). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(py_on_exec, struct task_struct *p)
{
	__u32 tgid = p->tgid;

	bpf_map_delete_elem(&py_procs, &tgid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(py_on_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid;

	if (p->pid == p->tgid)
		bpf_map_delete_elem(&py_procs, &tgid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
