/* SPDX-License-Identifier: MIT */
/* The only contract between the BPF programs and userspace: ring-buffer records and counters.
 * Fixed-width fields only; every record starts with its type. */
#ifndef TRACER_EVENTS_H
#define TRACER_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define COMM_LEN 16
/* The kernel hijacks at most 64 nested returns per task (MAX_URETPROBE_DEPTH). */
#define MAX_FRAMES 64
#define MAX_ARGS 4	/* integer arguments captured per call */
#define MAX_NAME_DEREFS 4 /* pointers a name_from may follow */
#define SPAN_NAME_LEN 32 /* a span name read from the target (name_from), NUL included */
#define MAX_PROBES 65536
#define MAX_TARGETS 4096 /* traced processes alive (or not yet reaped) at once */

enum rec_type {
	REC_SPAN = 1,
	REC_SWITCH,
	REC_WAKEUP,
	REC_TASK,
	REC_PY_STACK,
	REC_SWITCH_WAKE, /* a switch_wake_rec */
	REC_TYPE_MAX,
};

enum span_flags {
	SPAN_INCOMPLETE = 1, /* the return was never seen: end_ns is when that was noticed */
	SPAN_INSTANT = 2,    /* an entry-only probe: the call's start, no return */
	SPAN_CAPTURE = 4,    /* a span_capture follows the span_rec */
	SPAN_EXCEPTION = 8,  /* a C++ exception unwound the call: end_ns is when the thread was
			      * next seen above it, at its catch at the latest */
};

/* The cookie of on_exception's links. */
enum exception_hook {
	EXC_THROW = 1, /* _Unwind_RaiseException, _Unwind_Resume_or_Rethrow, _Unwind_ForcedUnwind */
	EXC_CATCH = 2, /* __cxa_begin_catch */
};

/* What a probe captures, indexed by probe id (the cookie). */
enum probe_flags {
	PROBE_ENTRY_ONLY = 1,
	PROBE_NAME_FROM = 2, /* name the span from a string at argument name_arg, or reached from
			      * it through name_nderef pointers (argN->Type.field->...:str) */
	PROBE_ARGS = 4,	     /* capture arguments arg_idx[0..nargs) */
	PROBE_RET = 8,	     /* capture the return value */
	PROBE_USDT = 16,     /* a USDT probe: arguments as usdt_cfgs describes them */
	PROBE_PY_WAIT = 32,  /* a wait inside CPython (a lock, the GIL): see PY_WAIT_MIN_NS */
	PROBE_SHED = 64,     /* over the overhead budget: being detached; new calls are ignored,
			      * the calls under way still end */
};

/* A link's BPF cookie is the probe id, with this bit on the links made to replace others when
 * probes are shed (record/attach.c): until the old link goes, a hit runs both programs. */
#define COOKIE_ODD_LINK (1ull << 32)
/* The link of a tracefs uprobe event (record/probe_events.c) serves many functions with one
 * cookie: this bit, and COOKIE_ODD_LINK as above. The probe id is found by the probe that fired:
 * its event and file offset, in probe_sites. */
#define COOKIE_BY_SITE (1ull << 33)
/* An exit site's cookie, above the probe id, where the exit moved back from its `ret`
 * (elf/site.h: struct site_exit): rsp at the `ret` is rsp (or rbp) at the site plus a constant,
 * and at a jcc the call ends only if the jump is not taken. */
#define EXIT_SP_SHIFT 40 /* 16 bits, signed: that constant */
#define EXIT_FROM_RBP (1ull << 56)
#define EXIT_CC_SHIFT 57 /* 4 bits: the jcc's condition code */
#define EXIT_IF_NOT_TAKEN (1ull << 61)

/* A probed instruction of a tracefs event: the event's tracepoint id (an event serves one site
 * and program) and the instruction's file offset. The value in probe_sites is its probe id. */
struct site_key {
	__u32 event;
	__u32 _pad;
	__u64 offset;
};

enum usdt_arg_kind_bpf {
	USDT_BPF_CONST,
	USDT_BPF_REG, /* the value of the register at reg_off in pt_regs */
	USDT_BPF_MEM, /* the value at that register + val */
};

/* How to fetch one USDT argument (from its operand string, elf/usdt.c). */
struct usdt_arg_cfg {
	__u32 kind; /* enum usdt_arg_kind_bpf */
	__u32 size; /* bytes: 1, 2, 4, 8 */
	__u32 is_signed;
	__u32 reg_off;
	__u64 val;
};

/* The arguments a USDT probe captures, in the order of probe_cfg.arg_idx, by probe id. */
struct usdt_cfg {
	struct usdt_arg_cfg args[MAX_ARGS];
};

struct probe_cfg {
	__u32 flags;
	__u8 name_arg;
	__u8 nargs;
	__u8 arg_idx[MAX_ARGS];
	__u8 name_nderef;
	__u8 _pad;
	__u16 name_deref[MAX_NAME_DEREFS]; /* byte offsets of the pointers followed, in order */
};

/* One completed call of a probed function. */
struct span_rec {
	__u32 type;
	__u32 probe_id;
	__u32 pid;
	__u32 tid;
	__u64 start_ns;
	__u64 end_ns;
	__u32 depth; /* frames open below this one on the thread */
	__u32 flags;
};

/* Captured values of a probe with PROBE_NAME_FROM, PROBE_ARGS or PROBE_RET. */
struct span_capture {
	__u64 args[MAX_ARGS];
	__u64 ret;
	char name[SPAN_NAME_LEN];
};

struct span_capture_rec {
	struct span_rec span;
	struct span_capture cap;
};

/* A call in progress, in the thread's stack in task storage (userspace reads what is still
 * open when recording stops). */
struct frame {
	__u64 start_ns;
	__u64 sp; /* stack pointer at entry: matches the return and finds frames it skipped */
	__u32 probe_id;
	__u32 flags; /* the probe's probe_flags */
	struct span_capture cap;
};

/* A name read through a chain of pointers (name_from "argN->Type.field->...:str"), by the
 * chain's first pointer and the probe: the objects such chains follow (a GStreamer pad, its
 * peer, the peer's element and its name) live across calls, and the four reads were most of a
 * push's cost. Read again once NAME_MEMO_NS old: a relinked pad shows its new peer after that
 * at most. */
#define NAME_MEMO 8
#define NAME_MEMO_NS (10 * 1000 * 1000ULL)
struct name_memo {
	__u64 ptr;
	__u64 read_ns; /* 0: empty */
	__u32 probe_id;
	__u32 pad;
	char name[SPAN_NAME_LEN];
};

/* Calls in progress on one thread, innermost last. */
struct span_stack {
	__u32 depth;
	__u32 tid; /* the thread's ids, kept here to spare a helper call per span */
	__u32 pid;
	__u32 in_flight; /* a C++ exception is unwinding this thread's calls */
	/* a wait inside the interpreter is being pushed (span_enter): its start, with which a
	 * Python read meanwhile stamps itself */
	__u64 entering_ns;
	struct frame frames[MAX_FRAMES];
	struct name_memo names[NAME_MEMO]; /* by a hash of ptr (spans.bpf.c, capture_entry) */
};

struct switch_rec {
	__u32 type;
	__u32 cpu;
	__u64 ts;
	__u32 prev_pid;
	__u32 prev_tid;
	__u32 prev_prio;
	__u32 prev_state; /* TASK_* bits as sched_switch reports them; 0 = runnable */
	__u32 next_pid;
	__u32 next_tid;
	__u32 next_prio;
	__u32 preempt;
	char prev_comm[COMM_LEN];
	char next_comm[COMM_LEN];
};

/* A wakeup_rec comes alone for a waking that ends no switch out (the thread was still queued)
 * and for a new thread's first wake-up; other wakings come with the switch in (wake_info). */
enum wakeup_kind {
	WAKEUP_WAKING,
	WAKEUP_WAKEUP, /* not sent (sched_wakeup is not traced): its line is written from the waking */
	WAKEUP_NEW,
};

struct wakeup_rec {
	__u32 type;
	__u32 kind; /* enum wakeup_kind */
	__u64 ts;
	__u32 pid;
	__u32 tid;
	__u32 prio;
	__u32 target_cpu;
	__u32 cpu; /* where the waker runs */
	__u32 waker_pid;
	__u32 waker_tid;
	__u32 waker_depth; /* calls the waker is inside (0: no span to draw an arrow from) */
	__u32 irq; /* enum wake_context: from an interrupt, the waker_* task was only interrupted */
	__u32 _pad;
	char comm[COMM_LEN];
	char waker_comm[COMM_LEN];
};

/* What sched_waking told of a thread, kept in its task storage until it is switched in, where
 * it comes with the switch (struct switch_wake_rec): one record per wake-up and switch instead of
 * three. The woken thread's ids, priority and name are the switch's next_*. */
struct wake_info {
	__u64 ts;
	__u32 cpu;	  /* where the waker runs */
	__u32 target_cpu; /* the woken thread's CPU when woken */
	__u32 waker_pid;
	__u32 waker_tid;
	__u32 waker_depth; /* as in wakeup_rec */
	__u32 irq;	   /* enum wake_context */
	char waker_comm[COMM_LEN];
};

struct switch_wake_rec {
	struct switch_rec sw; /* type REC_SWITCH_WAKE */
	struct wake_info wake; /* the waking of sw.next_tid */
};

/* Where a waking ran: a timer or an I/O completion wakes from an interrupt, on top of whatever
 * task was running; that task woke no one. */
enum wake_context {
	WAKE_TASK,
	WAKE_SOFTIRQ,
	WAKE_HARDIRQ, /* or NMI */
};

enum task_event {
	TASK_NEW,    /* fork or clone: tid is the child */
	TASK_EXIT,
	TASK_RENAME,
	TASK_EXEC,   /* with --follow the process is stopped (SIGSTOP) until userspace resumes it */
	TASK_SEEN,   /* -a: a process called a probed function for the first time */
	TASK_AT_ENTRY, /* a followed process reached its entry point and is stopped there */
};

struct task_rec {
	__u32 type;
	__u32 event; /* enum task_event */
	__u64 ts;
	__u32 pid;
	__u32 tid;
	__u32 parent_pid;
	__u32 parent_tid;
	char comm[COMM_LEN];
};

enum record_phase {
	PHASE_ATTACHING,
	PHASE_RECORDING,
	PHASE_DETACHING,
	PHASE_PAUSED, /* SIGUSR1: nothing new is recorded; calls in progress still complete */
};

/* Per-CPU counters, read by userspace at the end. */
enum counter {
	CNT_LOST_SPAN,	     /* ring buffer full: span record dropped */
	CNT_LOST_SWITCH,
	CNT_LOST_WAKEUP,
	CNT_LOST_TASK,
	CNT_SPANS,	     /* spans submitted */
	CNT_SHORT_SPANS,     /* spans under --min-dur, not submitted */
	CNT_DEEP_FRAMES,     /* calls nested deeper than MAX_FRAMES: not recorded */
	CNT_UNMATCHED_RETS,  /* returns with no frame while recording */
	CNT_STALE_FRAMES,    /* frames whose return never fired (longjmp, 64-deep limit) */
	CNT_EXIT_FRAMES,     /* frames open when their thread exited */
	CNT_NO_STORAGE,	     /* task storage could not be allocated */
	CNT_LOST_PY,	     /* ring buffer full: Python stack read dropped */
	CNT_PY_CHECKS,	     /* Python stacks looked at (switch, tick, probe hit) */
	CNT_PY_READS,	     /* ... of which changed and were submitted */
	CNT_PY_FAULTS,	     /* a read of the interpreter's memory failed */
	CNT_PY_TRUNCATED,    /* stacks deeper than PY_MAX_FRAMES: the outermost frames are cut */
	CNT_PY_NS,	     /* ns spent reading Python stacks, on the Python threads */
	CNT_PY_PROBE_NS,     /* ... of which at probe hits (inside the span program's run time) */
	/* filled by userspace: */
	CNT_SKIPPED_SCHED,   /* scheduler program runs the kernel skipped (recursion_misses) */
	CNT_SKIPPED_PROBES,  /* ... and span program runs (a call or a return not seen) */
	CNT_SCHED_GAPS,	     /* threads switched out (or in) twice: their state is unknown between */
	CNT_SHORT_PY_WAITS,  /* interpreter waits shorter than PY_WAIT_MIN_NS, not submitted */
	CNT_EXCEPTION_SPANS, /* spans a C++ exception ended (SPAN_EXCEPTION) */
	/* filled by BPF: */
	CNT_TARGETS_FULL,    /* a process to trace found the targets map full: not traced */
	CNT_UNKNOWN_SITES,   /* hits of a tracefs event whose probe id was not found (not recorded) */
	CNT_UNREPORTED_SWITCHES, /* switches in that fired no sched_switch, found after (sched.bpf.c) */
	CNT_MAX,
};

/* Python frames (bpf/python.bpf.c). A thread's Python stack is read when it leaves the CPU, on
 * a periodic on-CPU tick, and when it enters a probed native function; a read that finds the
 * same innermost frame at the same instruction as the previous one is submitted without its
 * frames (PY_SAME): userspace still learns when the stack was last seen. */
#define PY_MAX_FRAMES 64
/* A wait inside the interpreter (PROBE_PY_WAIT: PyEval_RestoreThread, a lock) is kept only when
 * it lasted this long: taking an uncontended GIL back takes microseconds, tens of thousands of
 * times a second in a PyTorch program. Its Python stack is read at its return (the same as at
 * its entry: it runs no Python code), and only for the ones kept. */
#define PY_WAIT_MIN_NS 20000

enum py_read_reason {
	PY_READ_PREEMPT, /* the thread left the CPU runnable: its stack holds until it runs again */
	PY_READ_BLOCK,	 /* the thread left the CPU to wait (sleep, lock, I/O) */
	PY_READ_TICK,	 /* the periodic on-CPU tick */
	PY_READ_PROBE,	 /* a probed native function was entered: ts is the span's start_ns */
	PY_READ_WAIT,	 /* the same, for a wait inside the interpreter (PROBE_PY_WAIT): its stack
			  * nests the span; an unchanged one says nothing of when frames change */
};

enum py_read_flags {
	PY_TRUNCATED = 1, /* deeper than PY_MAX_FRAMES: frames[] misses the outermost ones */
	PY_FAULT = 2,	  /* a frame could not be read: frames[] ends early */
	PY_SAME = 4,	  /* the same stack as the last read: no frames follow (depth 0) */
	PY_GIL = 8,	  /* PY_READ_BLOCK: the thread blocks to take the GIL (py_proc_cfg.gil_*) */
	PY_WOKE = 16,	  /* PY_READ_PREEMPT: it woke a thread at most PY_WOKE_NS before */
};

/* A thread preempted this soon after it woke another (a queue's put waking its consumer) was
 * put off the CPU for its own act, not at a time unrelated to what it ran: like a thread that
 * blocks, what it finished before it finished just before. */
#define PY_WOKE_NS 50000

/* Where the interpreter of one traced process keeps its threads and frames: the addresses
 * and struct offsets (from its version's offsets table, tools/py_offsets.c) the BPF side needs. */
enum py_cfg_flags {
	PY_CFG_PTHREAD = 1, /* tstate_match is thread_id (pthread_self()): 3.8-3.10 have no tid */
	PY_CFG_CFRAME = 2,  /* tstate_frame points to a _PyCFrame holding the frame (3.11, 3.12) */
	PY_CFG_OWNER = 4,   /* frames whose owner byte is owner_cstack or more: shims, skipped */
	PY_CFG_GIL_INTERP = 8, /* gil_at is where the interpreter points to the GIL (3.12 on) */
};

/* The bytes of a frame read at once: its code, previous frame, instruction and owner. */
#define PY_FRAME_READ 128
/* The locals of a frame that tell one of its calls from the next (struct py_frame.locals). */
#define PY_LOCALS_HASHED 8
/* The most bytes read at once: a frame's fields with its first locals, or a thread state's id
 * with its current frame. */
#define PY_READ_MAX 256

struct py_proc_cfg {
	__u64 runtime; /* address of _PyRuntime in the process */
	__u32 runtime_interp_head;
	__u32 interp_next;
	__u32 interp_threads_head;
	__u32 tstate_next;
	__u32 tstate_match; /* the field that tells the thread: native_thread_id or thread_id */
	__u32 tstate_frame; /* the current frame, or the _PyCFrame holding it (PY_CFG_CFRAME) */
	__u32 cframe_current_frame;
	__u32 frame_base; /* the lowest of the frame fields below: where the one read starts */
	__u32 frame_read; /* bytes read from there (at most PY_FRAME_READ) */
	__u32 frame_code; /* the others relative to frame_base */
	__u32 frame_previous;
	__u32 frame_prev_instr;
	__u32 frame_owner;
	__u32 owner_cstack;
	__u32 frame_localsplus; /* the frame's locals, from the frame's start (not frame_base) */
	__u32 code_nlocals;	/* their count: an int of the code object */
	__u32 code_qualname; /* co_qualname, or co_name before 3.11 */
	__u32 str_length;     /* the qualname's length ... */
	__u32 str_ascii_data; /* ... and its first characters: the name's fingerprint */
	__u32 flags;	      /* enum py_cfg_flags */
	/* The GIL: at _PyRuntime + gil_at, or pointed to from the interpreter's gil_at
	 * (PY_CFG_GIL_INTERP); a futex wait on its bytes [gil_lo, gil_hi) is a wait for it
	 * (gil_hi 0: not told) */
	__u32 gil_at;
	__u32 gil_lo;
	__u32 gil_hi;
	/* where the frame's locals start from frame_base when a read of PY_FRAME_READ +
	 * PY_LOCALS_HASHED words there takes them with the fields (3.11 on; 0: not so) */
	__u32 frame_locals_at;
	/* the thread state's bytes from tstate_lo holding tstate_match and tstate_frame, read at
	 * once (0: two reads) */
	__u32 tstate_lo;
	__u32 tstate_span;
};

/* What a code object's name said when its frame was read: the str's length and first 8 bytes
 * (an ASCII name's first characters). Userspace names code objects later; by then the code, and
 * its name, may have been freed and their memory taken by others: a name whose str no longer
 * has this fingerprint is not the one that ran. */
static inline __u64 py_name_fp(__u64 length, __u64 head)
{
	if (length < 8)
		head &= (1ULL << (8 * length)) - 1;
	return (head ^ length) * 0x9e3779b97f4a7c15ULL;
}

struct py_frame {
	__u64 code;  /* the PyCodeObject: named in userspace */
	__u64 instr; /* the frame's prev_instr: the line being run (or calling the next frame) */
	__u64 name;  /* its co_qualname: tells a code object from one that later took its memory */
	__u64 name_fp; /* py_name_fp() of that str when read */
	/* A hash of the frame's first PY_LOCALS_HASHED locals (arguments first): a frame that
	 * called another is suspended, its locals stay put until the call returns, so a change
	 * under the same callee says the callee was called again (a loop's variable moved on). */
	__u64 locals;
};

/* One read of a thread's Python stack, innermost frame first. Submitted with only its depth
 * frames: the record's size is offsetof(struct py_stack_rec, frames) + depth * 40. */
struct py_stack_rec {
	__u32 type;
	__u32 reason; /* enum py_read_reason */
	__u32 pid;
	__u32 tid;
	__u64 ts;     /* when the stack was as read: inside an interpreter's wait, its start */
	__u64 now_ns; /* when it was read (a wait for the GIL begins then, not at ts) */
	__u32 depth;
	__u32 flags; /* enum py_read_flags */
	struct py_frame frames[PY_MAX_FRAMES];
};

#ifndef __cplusplus
_Static_assert(sizeof(struct py_proc_cfg) == 112, "py_proc_cfg layout");
_Static_assert(sizeof(struct py_stack_rec) == 40 + 40 * PY_MAX_FRAMES, "py_stack_rec layout");
_Static_assert(sizeof(struct span_rec) == 40, "span_rec layout");
_Static_assert(sizeof(struct span_capture_rec) == 40 + 72, "span_capture_rec layout");
_Static_assert(sizeof(struct probe_cfg) == 20, "probe_cfg layout");
_Static_assert(sizeof(struct usdt_cfg) == 24 * MAX_ARGS, "usdt_cfg layout");
_Static_assert(sizeof(struct switch_rec) == 80, "switch_rec layout");
_Static_assert(sizeof(struct wakeup_rec) == 88, "wakeup_rec layout");
_Static_assert(sizeof(struct switch_wake_rec) == 80 + 48, "switch_wake_rec layout");
_Static_assert(sizeof(struct task_rec) == 48, "task_rec layout");
#endif

#endif
