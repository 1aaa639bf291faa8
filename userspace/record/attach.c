// SPDX-License-Identifier: MIT
#include "record/attach.h"
#include "record/expedite.h"
#include "elf/elf_syms.h"
#include "util/util.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* libbpf 1.1 and its headers predate uprobe_multi (kernel 6.6): the BPF_LINK_CREATE layout is
 * spelled out here. */
#define UPROBE_MULTI_RETURN 1

struct link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 _pad;
};

int attach__uprobe_multi(int prog_fd, const char *path, const uint64_t *offsets,
			 const uint64_t *cookies, size_t cnt, int pid, bool ret)
{
	return attach__uprobe_multi_ref(prog_fd, path, offsets, NULL, cookies, cnt, pid, ret);
}

int attach__uprobe_multi_ref(int prog_fd, const char *path, const uint64_t *offsets,
			     const uint64_t *ref_ctr_offsets, const uint64_t *cookies, size_t cnt,
			     int pid, bool ret)
{
	union bpf_attr attr;
	struct link_create_uprobe_multi *lc = (void *)&attr;

	_Static_assert(sizeof(*lc) <= sizeof(attr), "bpf_attr too small");
	memset(&attr, 0, sizeof(attr));
	lc->prog_fd = prog_fd;
	lc->attach_type = TRACE_UPROBE_MULTI;
	lc->path = (uintptr_t)path;
	lc->offsets = (uintptr_t)offsets;
	lc->ref_ctr_offsets = (uintptr_t)ref_ctr_offsets;
	lc->cookies = (uintptr_t)cookies;
	lc->cnt = cnt;
	lc->multi_flags = ret ? UPROBE_MULTI_RETURN : 0;
	lc->pid = pid;
	return syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
}

/* A function of our own to probe once, in our own process, to see if uprobe_multi works. In a
 * page of its own (and the next function in the next): the probe makes the kernel replace that
 * page with a copy holding the breakpoint, and valgrind, translating code of ours from the
 * replaced page next, crashed (an mc_translate assertion in test_valgrind_short_recording,
 * depending on where the linker put this function). */
__attribute__((noinline, aligned(4096))) int attach__probe_site(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static void *call_probe_site(void *arg)
{
	(void)arg;
	attach__probe_site(1);
	return NULL;
}

/* Whether this kernel is one of 6.6 to 6.9, whose uprobe_multi links given a pid run their
 * program only in the thread whose id is that pid, not in the process's other threads (fixed
 * by "bpf: fix multi-uprobe PID filtering logic" in 6.10, 6.9.5 and 6.6.35): the release alone
 * does not tell, a probe hit from a second thread does. */
static bool multi_release_may_filter_threads(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (getenv("TRACER_MULTI_THREAD_CHECK")) /* the tests: the check itself, on any kernel */
		return true;
	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return false;
	return major == 6 && minor >= 6 && minor < 10;
}

/* Hits of a program counting into an array map's one u64, attached with pid filter getpid()
 * to attach__probe_site, called from another thread, then from this one: true if the other
 * thread's call ran nothing and this one's did (the kernel filters by thread). Only on the
 * kernels that may: the call traps in a page the probe replaced (see attach__probe_site). */
static bool multi_filters_threads(const struct elf_sym *sym)
{
	int map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 8, 1, NULL), prog_fd = -1;
	int link_fd = -1;
	__u64 other = 0, own = 0;
	uint64_t cookie = 0;
	__u32 key = 0;
	pthread_t th;
	bool by_thread = false;

	if (map_fd < 0)
		return false;
	{
		const struct bpf_insn insns[] = {
			/* *(u32 *)(fp - 4) = 0; r2 = fp - 4; r1 = map */
			{ .code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = BPF_REG_10, .off = -4 },
			{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_10 },
			{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -4 },
			{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
			  .src_reg = BPF_PSEUDO_MAP_FD, .imm = map_fd },
			{ 0 },
			{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_lookup_elem },
			/* if (r0) *(u64 *)r0 = 1 */
			{ .code = BPF_JMP | BPF_JEQ | BPF_K, .dst_reg = BPF_REG_0, .off = 1 },
			{ .code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_0, .imm = 1 },
			{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
			{ .code = BPF_JMP | BPF_EXIT },
		};
		LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = TRACE_UPROBE_MULTI);

		prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "probe_thread", "GPL", insns,
					sizeof(insns) / sizeof(insns[0]), &opts);
	}
	if (prog_fd >= 0)
		link_fd = attach__uprobe_multi(prog_fd, "/proc/self/exe", &sym->offset, &cookie, 1,
					       getpid(), false);
	if (link_fd >= 0 && !pthread_create(&th, NULL, call_probe_site, NULL)) {
		pthread_join(th, NULL);
		bpf_map_lookup_elem(map_fd, &key, &other);
		attach__probe_site(1);
		bpf_map_lookup_elem(map_fd, &key, &own);
		by_thread = !other && own;
		pr_debug("uprobe_multi's pid filter: %s", by_thread ? "by thread" :
			 own ? "by process" : "no hit in either thread");
	}
	if (link_fd >= 0)
		close(link_fd);
	if (prog_fd >= 0)
		close(prog_fd);
	close(map_fd);
	return by_thread;
}

__attribute__((aligned(4096))) bool attach__multi_supported(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = TRACE_UPROBE_MULTI);
	const struct elf_sym *sym;
	struct elf_syms *syms = NULL;
	int prog_fd, link_fd = -1;
	uint64_t cookie = 0;
	bool ok;

	/* Lets the tests run the per-function fallback on kernels that have uprobe_multi. */
	if (getenv("TRACER_NO_UPROBE_MULTI"))
		return false;
	if (elf_syms__open("/proc/self/exe", &syms))
		return false;
	sym = elf_syms__find(syms, "attach__probe_site");
	prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "probe_multi", "GPL", insns, 2, &opts);
	if (sym && prog_fd >= 0)
		link_fd = attach__uprobe_multi(prog_fd, "/proc/self/exe", &sym->offset, &cookie, 1,
					    getpid(), false);
	pr_debug("uprobe_multi links: %s", link_fd >= 0 ? "yes" : strerror(errno));
	if (link_fd >= 0)
		close(link_fd);
	if (prog_fd >= 0)
		close(prog_fd);
	ok = link_fd >= 0;
	/* a link that misses every thread but one would lose their calls: a perf-event uprobe per
	 * function instead (filtered by process), every span the same */
	if (ok && multi_release_may_filter_threads() && multi_filters_threads(sym)) {
		pr_info("this kernel's uprobe_multi links filter by thread, not by process (6.6 to "
			"6.9): a perf-event uprobe per function instead");
		ok = false;
	}
	elf_syms__free(syms);
	return ok;
}

const char *attach__kind(const struct attachment *a)
{
	return a->multi ? "uprobe_multi" : a->by_event ? "uprobe_events" : "uprobe";
}

void attach__set_programs(struct attachment *a, struct bpf_program *usdt_end,
			  struct bpf_program *at_exit)
{
	a->usdt_end = usdt_end;
	a->at_exit = at_exit;
}

/* The kernel refuses this function, not the whole attachment: the others go on without it. */
static bool refused_alone(int e)
{
	return e == -524 /* ENOTSUPP: an instruction uprobes cannot handle */ || e == -EINVAL ||
	       e == -EOPNOTSUPP;
}

static void refuse(struct attachment *a, uint64_t cookie, int e, bool ret)
{
	a->refused = xrealloc(a->refused, a->nrefused + 1, sizeof(*a->refused));
	a->refused[a->nrefused++] = (struct refused_probe){ (uint32_t)cookie, e, ret };
}

static uint64_t *copy_u64(const uint64_t *v, size_t n)
{
	uint64_t *c;

	if (!v)
		return NULL;
	c = xcalloc(n, sizeof(*c));
	memcpy(c, v, n * sizeof(*c));
	return c;
}

static void keep_fd(struct attachment *a, int fd, bool ret, int pfd, const struct attach_site *s,
		    size_t lo, size_t hi, const struct probe_event *ev)
{
	struct link_range *r;

	a->link_fds = xrealloc(a->link_fds, a->nfds + 1, sizeof(int));
	a->link_is_return = xrealloc(a->link_is_return, a->nfds + 1, sizeof(bool));
	a->ranges = xrealloc(a->ranges, a->nfds + 1, sizeof(*a->ranges));
	r = &a->ranges[a->nfds];
	r->prog_fd = pfd;
	r->pid = s->pid;
	r->path = xstrdup(s->path);
	r->offsets = copy_u64(s->offsets + lo, hi - lo);
	r->cookies = copy_u64(s->cookies + lo, hi - lo);
	r->ref_ctr_offsets = s->ref_ctr_offsets ? copy_u64(s->ref_ctr_offsets + lo, hi - lo) : NULL;
	r->cnt = hi - lo;
	r->ev = *ev;
	a->link_fds[a->nfds] = fd;
	a->link_is_return[a->nfds++] = ret;
}

/* One link for cnt offsets: a uprobe_multi link, or a tracefs event's (ev; its one cookie says
 * that BPF finds each hit's probe id by the probe that fired, and whether the link replaces
 * another: COOKIE_ODD_LINK of the cookies, all alike). The link fd, or -1 with errno set. */
static int open_link(const struct attachment *a, int prog_fd, const char *path,
		     const uint64_t *offsets, const uint64_t *ref_ctr_offsets,
		     const uint64_t *cookies, size_t cnt, int pid, bool ret, struct probe_event *ev)
{
	int err;

	memset(ev, 0, sizeof(*ev));
	if (!a->by_event)
		return attach__uprobe_multi_ref(prog_fd, path, offsets, ref_ctr_offsets, cookies,
						cnt, pid, ret);
	err = probe_events__open(ev, prog_fd, a->sites_map_fd, path, offsets, ref_ctr_offsets,
				 cookies, cnt, pid, ret, COOKIE_BY_SITE | (cookies[0] & COOKIE_ODD_LINK));
	errno = -err;
	return err ? -1 : ev->link_fd;
}

/* Offsets [lo, hi) of s in one link; when the kernel refuses it, each half in its own, down to
 * the functions it refuses alone: few links, and every one that took is kept. */
static int attach_range(struct attachment *a, const struct attach_site *s, int pfd, bool ret,
			size_t lo, size_t hi, char *err, size_t errlen)
{
	size_t mid = lo + (hi - lo) / 2;
	struct probe_event ev;
	int fd, e;

	fd = open_link(a, pfd, s->path, s->offsets + lo,
		       s->ref_ctr_offsets ? s->ref_ctr_offsets + lo : NULL, s->cookies + lo, hi - lo,
		       s->pid, ret, &ev);
	if (fd >= 0) {
		keep_fd(a, fd, ret, pfd, s, lo, hi, &ev);
		return 0;
	}
	e = -errno;
	if (!refused_alone(e)) {
		snprintf(err, errlen, "cannot attach %zu probes to %s in pid %d: %s", hi - lo,
			 s->object, s->pid, strerror(-e));
		return e;
	}
	if (hi - lo == 1) {
		refuse(a, s->cookies[lo], e, ret);
		return 0;
	}
	e = attach_range(a, s, pfd, ret, lo, mid, err, errlen);
	return e ? e : attach_range(a, s, pfd, ret, mid, hi, err, errlen);
}

/* A process of its own whose probes could not be attached because it has exited meanwhile (a
 * child followed that ended while tracer set up or took it in): nothing of it to probe. Its
 * object is opened through /proc/PID/map_files, gone with it: ENOENT (a DataLoader's workers
 * of one epoch, ending while tracer attached, made -p fail, "cannot attach 3 probes to
 * libunwind.so.8.0.1 in pid N: No such file or directory"). */
static bool gone(const struct attach_site *s, int e)
{
	if (s->pid <= 0 || (e != -ESRCH && !(e == -ENOENT && !strncmp(s->path, "/proc/", 6))))
		return false;
	pr_debug("pid %d exited (or unmapped %s) before its probes there were attached", s->pid,
		 s->object);
	return true;
}

/* The program of a site that is not a span's entry: a USDT end, a function's exits. */
static struct bpf_program *site_program(const struct attachment *a, const struct attach_site *s)
{
	return s->usdt_end ? a->usdt_end : s->at_exit ? a->at_exit : NULL;
}

static int attach_multi(struct attachment *a, const struct attach_sites *sites, int prog_fd,
			bool ret, char *err, size_t errlen)
{
	for (size_t i = 0; i < sites->cnt; i++) {
		const struct attach_site *s = &sites->v[i];
		int pfd = prog_fd, e;

		if (ret && s->entry_only)
			continue;
		if (s->usdt_end || s->at_exit) {
			if (!site_program(a, s))
				continue;
			pfd = bpf_program__fd(site_program(a, s));
		}
		e = attach_range(a, s, pfd, ret, 0, s->cnt, err, errlen);
		if (gone(s, e))
			continue;
		if (e)
			return e;
	}
	return 0;
}

static int attach_each(struct attachment *a, const struct attach_sites *sites,
		       struct bpf_program *prog, bool ret, char *err, size_t errlen)
{
	for (size_t i = 0; i < sites->cnt; i++) {
		const struct attach_site *s = &sites->v[i];

		if ((s->usdt_end || s->at_exit) && !site_program(a, s))
			continue;
		for (size_t k = 0; k < s->cnt && !(ret && s->entry_only); k++) {
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret,
				    .bpf_cookie = s->cookies[k],
				    .ref_ctr_offset = s->ref_ctr_offsets ? s->ref_ctr_offsets[k] : 0);
			struct bpf_link *l;

			l = bpf_program__attach_uprobe_opts(site_program(a, s) ? site_program(a, s) : prog,
							    s->pid ? s->pid : -1, s->path,
							    s->offsets[k], &opts);
			if (!l && gone(s, -errno))
				break;
			if (!l && refused_alone(-errno)) {
				refuse(a, s->cookies[k], -errno, ret);
				continue;
			}
			if (!l) {
				int e = -errno;

				snprintf(err, errlen, "cannot attach to %s+%#llx in pid %d: %s",
					 s->object, (unsigned long long)s->offsets[k], s->pid,
					 strerror(-e));
				return e;
			}
			a->links = xrealloc(a->links, a->nlinks + 1, sizeof(*a->links));
			a->link_cookies = xrealloc(a->link_cookies, a->nlinks + 1, sizeof(uint64_t));
			a->link_pids = xrealloc(a->link_pids, a->nlinks + 1, sizeof(int));
			a->link_cookies[a->nlinks] = s->cookies[k];
			a->link_pids[a->nlinks] = s->pid;
			a->links[a->nlinks++] = l;
		}
	}
	return 0;
}

/* Each per-function link holds two descriptors (the perf event and the BPF link): 1,000
 * functions, entries and returns, are 4,000, past the usual soft limit (1,024; Debian 12's hard
 * one is 524,288, the kernel's own 4,096). Raised by what they need, the hard limit too when it
 * is lower (root may); when that fails, the attach that finds none left says so. */
void attach__enough_fds(size_t more)
{
	struct rlimit rl;
	rlim_t need;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return;
	need = rl.rlim_cur + more;
	rl.rlim_cur = need;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		rl.rlim_max = need;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pr_debug("cannot raise the open-file limit to %llu: %s", (unsigned long long)need,
			 strerror(errno));
}

int attach__sites(struct attachment *a, const struct attach_sites *sites,
		  struct bpf_program *enter, struct bpf_program *exit, char *err, size_t errlen)
{
	size_t added = 0;
	int ret;

	for (size_t i = 0; i < sites->cnt; i++)
		added += sites->v[i].cnt;
	a->nprobes += added;
	if (!a->multi && !a->by_event) /* the new entry and return links, two descriptors each */
		attach__enough_fds(4 * added);
	if (a->multi || a->by_event) {
		ret = attach_multi(a, sites, bpf_program__fd(exit), true, err, errlen);
		if (!ret)
			ret = attach_multi(a, sites, bpf_program__fd(enter), false, err, errlen);
	} else {
		ret = attach_each(a, sites, exit, true, err, errlen);
		if (!ret)
			ret = attach_each(a, sites, enter, false, err, errlen);
	}
	return ret;
}

/* Closing a link ends in uprobe_unregister_sync(), which waits for every return probe pending
 * when it began (synchronize_srcu(&uretprobes_srcu)). A call in progress holds its lease until
 * it returns or until 100 ms pass without the thread hitting another return probe: a thread
 * inside a probed call that keeps calling probed functions holds it for as long as that goes
 * on. So no link is closed on this thread, and all close at once: each first unhooks its
 * probes (the target stops trapping, and re-arming), then waits for the others to do so. */
#define CLOSER_STACK (64 << 10)
#define DETACH_WAIT_S 3
#define RETURN_GRACE_MS 200

/* The per-function fallback's links, closed by this many threads: their closes wait for grace
 * periods one after another (under the kernel's event_mutex), so a thread each would only pile
 * up thousands of threads waiting on it. */
#define FALLBACK_CLOSERS 8

/* Links closed so far, by any closing thread: the wait at the end goes on while it grows. */
static _Atomic uint64_t links_closed;

/* What ends link i of link_fds: its fd, or its tracefs event. */
struct link_end {
	int fd;
	struct probe_event ev;
	bool later; /* an old return link replaced by a new one: kept a moment, for the calls
		     * entered before the new one existed (their returns reach only the old one) */
};

static struct link_end link_end_of(const struct attachment *a, size_t i, bool later)
{
	return (struct link_end){ a->link_fds[i], a->ranges[i].ev, later };
}

static void end_link(struct link_end *e)
{
	const struct timespec grace = { 0, RETURN_GRACE_MS * 1000000L };

	if (e->later)
		nanosleep(&grace, NULL);
	if (e->ev.name[0])
		probe_events__close(&e->ev);
	else
		close(e->fd);
	links_closed++;
}

static void *end_link_thread(void *arg)
{
	end_link(arg);
	free(arg);
	return NULL;
}

static void *destroy_link(void *arg)
{
	bpf_link__destroy(arg);
	links_closed++;
	return NULL;
}

/* Joins the closing threads that are done: a recording that releases the links of thousands
 * of short-lived children keeps only the ones still waiting. */
static void reap_closers(struct attachment *a)
{
	size_t k = 0;

	for (size_t i = 0; i < a->nclosers; i++)
		if (pthread_tryjoin_np(a->closers[i], NULL))
			a->closers[k++] = a->closers[i];
	a->nclosers = k;
}

static void retire(struct attachment *a, void *(*close_it)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t t;

	reap_closers(a);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, CLOSER_STACK);
	if (pthread_create(&t, &attr, close_it, arg)) {
		close_it(arg); /* no thread: here, and in this order */
	} else {
		a->closers = xrealloc(a->closers, a->nclosers + 1, sizeof(*a->closers));
		a->closers[a->nclosers++] = t;
	}
	pthread_attr_destroy(&attr);
}

static void retire_link(struct attachment *a, size_t i, bool later)
{
	struct link_end *e;

	if (a->link_fds[i] < 0)
		return;
	e = xcalloc(1, sizeof(*e));
	*e = link_end_of(a, i, later);
	retire(a, end_link_thread, e);
}

static bool shed_id(const bool *shed, size_t nids, uint64_t cookie)
{
	uint32_t id = (uint32_t)cookie;

	return id < nids && shed[id];
}

/* The probes of link i that stay; the old link when it cannot be made again (the shed ones
 * are then ignored in BPF, at their old cost). Marks the probe ids that go. */
static void relink(struct attachment *a, size_t i, const bool *shed, size_t nids, bool *gone)
{
	struct link_range *r = &a->ranges[i], k = *r;
	int fd = -1;

	memset(&k.ev, 0, sizeof(k.ev));
	k.offsets = xcalloc(r->cnt, sizeof(uint64_t));
	k.cookies = xcalloc(r->cnt, sizeof(uint64_t));
	k.ref_ctr_offsets = r->ref_ctr_offsets ? xcalloc(r->cnt, sizeof(uint64_t)) : NULL;
	k.cnt = 0;
	for (size_t j = 0; j < r->cnt; j++) {
		if (shed_id(shed, nids, r->cookies[j]))
			continue;
		k.offsets[k.cnt] = r->offsets[j];
		k.cookies[k.cnt] = r->cookies[j] ^ COOKIE_ODD_LINK;
		if (r->ref_ctr_offsets)
			k.ref_ctr_offsets[k.cnt] = r->ref_ctr_offsets[j];
		k.cnt++;
	}
	if (k.cnt)
		fd = open_link(a, k.prog_fd, k.path, k.offsets, k.ref_ctr_offsets, k.cookies, k.cnt,
			       k.pid, a->link_is_return[i], &k.ev);
	if (k.cnt && fd < 0) {
		pr_warn("probing %zu functions of %s without the shed ones failed: %s; the shed "
			"ones stay attached (and ignored)", k.cnt, r->path, strerror(errno));
		free(k.offsets);
		free(k.cookies);
		free(k.ref_ctr_offsets);
		return;
	}
	for (size_t j = 0; j < r->cnt; j++)
		if (shed_id(shed, nids, r->cookies[j]))
			gone[(uint32_t)r->cookies[j]] = true;
	retire_link(a, i, a->link_is_return[i]);
	a->link_fds[i] = fd;
	free(r->offsets);
	free(r->cookies);
	free(r->ref_ctr_offsets);
	*r = k;
}

static bool holds_shed(const struct link_range *r, const bool *shed, size_t nids)
{
	for (size_t j = 0; j < r->cnt; j++)
		if (shed_id(shed, nids, r->cookies[j]))
			return true;
	return false;
}

size_t attach__shed(struct attachment *a, const bool *shed, size_t nids)
{
	bool *gone = xcalloc(nids + 1, sizeof(bool));
	size_t n = 0;

	/* returns first: a call that enters through a new entry link has its new return */
	for (int ret = 1; ret >= 0; ret--)
		for (size_t i = 0; i < a->nfds; i++)
			if (a->link_is_return[i] == ret && a->link_fds[i] >= 0 &&
			    holds_shed(&a->ranges[i], shed, nids))
				relink(a, i, shed, nids, gone);
	for (size_t i = 0; i < a->nlinks; i++) {
		if (!a->links[i] || !shed_id(shed, nids, a->link_cookies[i]))
			continue;
		retire(a, destroy_link, a->links[i]);
		a->links[i] = NULL;
		gone[(uint32_t)a->link_cookies[i]] = true;
	}
	for (size_t i = 0; i < nids; i++)
		n += gone[i];
	free(gone);
	return n;
}

/* The links of one process, closed on one thread: returns first, as in attach__detach. */
struct closing {
	struct link_end *ends;
	struct bpf_link **links;
	size_t nends, nlinks;
};

static void *close_all(void *arg)
{
	struct closing *c = arg;

	for (size_t i = 0; i < c->nends; i++)
		end_link(&c->ends[i]);
	for (size_t i = 0; i < c->nlinks; i++) {
		bpf_link__destroy(c->links[i]);
		links_closed++;
	}
	free(c->ends);
	free(c->links);
	free(c);
	return NULL;
}

void attach__release_pid(struct attachment *a, int pid)
{
	struct closing *c = xcalloc(1, sizeof(*c));
	size_t k = 0;

	c->ends = xcalloc(a->nfds + 1, sizeof(*c->ends));
	c->links = xcalloc(a->nlinks + 1, sizeof(*c->links));
	for (int ret = 1; ret >= 0; ret--)
		for (size_t i = 0; i < a->nfds; i++)
			if (a->ranges[i].pid == pid && a->link_is_return[i] == ret &&
			    a->link_fds[i] >= 0)
				c->ends[c->nends++] = link_end_of(a, i, false);
	/* the others move down: the arrays stay as long as the links of live processes */
	for (size_t i = 0; i < a->nfds; i++) {
		if (a->ranges[i].pid == pid) {
			free(a->ranges[i].path);
			free(a->ranges[i].offsets);
			free(a->ranges[i].cookies);
			free(a->ranges[i].ref_ctr_offsets);
			continue;
		}
		a->link_fds[k] = a->link_fds[i];
		a->link_is_return[k] = a->link_is_return[i];
		a->ranges[k++] = a->ranges[i];
	}
	a->nfds = k;
	k = 0;
	for (size_t i = 0; i < a->nlinks; i++) {
		if (a->link_pids[i] == pid) {
			if (a->links[i])
				c->links[c->nlinks++] = a->links[i];
			continue;
		}
		a->links[k] = a->links[i];
		a->link_cookies[k] = a->link_cookies[i];
		a->link_pids[k++] = a->link_pids[i];
	}
	a->nlinks = k;
	if (c->nends || c->nlinks) {
		retire(a, close_all, c);
	} else {
		free(c->ends);
		free(c->links);
		free(c);
	}
}

/* Waits for the closing threads while links keep closing: the per-function fallback's close
 * one after another, each in a few milliseconds (expedite.c). Once none has closed for a few
 * seconds, those still waiting on the kernel are left to it (the process ends when they do). */
static void wait_closers(struct attachment *a)
{
	const struct timespec tick = { 0, 2000000 };
	uint64_t last = now_ns(), closed = links_closed;
	size_t left;

	while (a->nclosers) {
		reap_closers(a);
		if (links_closed != closed) {
			closed = links_closed;
			last = now_ns();
		} else if (now_ns() - last >= DETACH_WAIT_S * 1000000000ull) {
			break;
		}
		nanosleep(&tick, NULL);
	}
	left = a->nclosers;
	for (size_t i = 0; i < a->nclosers; i++)
		pthread_detach(a->closers[i]);
	if (left)
		pr_warn("the kernel has not released %zu probe link%s, none for %d s (a thread of "
			"the target is inside a probed call and keeps hitting return probes, of "
			"another tool too): finishing without waiting; tracer exits when the kernel "
			"lets go", left, plural_s(left), DETACH_WAIT_S);
	free(a->closers);
	a->closers = NULL;
	a->nclosers = 0;
}

/* The per-function fallback's links, on FALLBACK_CLOSERS threads at most, each closing its
 * share in order. */
static void retire_links(struct attachment *a)
{
	for (size_t t = 0; t < FALLBACK_CLOSERS && t < a->nlinks; t++) {
		struct closing *c = xcalloc(1, sizeof(*c));

		c->links = xcalloc(a->nlinks / FALLBACK_CLOSERS + 1, sizeof(*c->links));
		for (size_t i = t; i < a->nlinks; i += FALLBACK_CLOSERS)
			if (a->links[i])
				c->links[c->nlinks++] = a->links[i];
		retire(a, close_all, c);
	}
}

void attach__detach(struct attachment *a)
{
	struct expedite x = { 0 };

	if (a->nlinks) /* the per-function fallback: grace periods close after close */
		expedite__begin(&x, "closing the per-function links");
	/* returns first: the kernel's wait ends once no return probe of ours is left */
	for (int ret = 1; ret >= 0; ret--)
		for (size_t i = 0; i < a->nfds; i++)
			if (a->link_is_return[i] == ret)
				retire_link(a, i, false);
	retire_links(a);
	wait_closers(a);
	expedite__end(&x);
	for (size_t i = 0; i < a->nfds; i++) {
		free(a->ranges[i].path);
		free(a->ranges[i].offsets);
		free(a->ranges[i].cookies);
		free(a->ranges[i].ref_ctr_offsets);
	}
	free(a->ranges);
	free(a->link_cookies);
	free(a->link_pids);
	a->ranges = NULL;
	a->link_cookies = NULL;
	a->link_pids = NULL;
	free(a->link_fds);
	free(a->link_is_return);
	free(a->links);
	free(a->refused);
	a->refused = NULL;
	a->nrefused = 0;
	a->link_fds = NULL;
	a->link_is_return = NULL;
	a->links = NULL;
	a->nfds = a->nlinks = 0;
}
