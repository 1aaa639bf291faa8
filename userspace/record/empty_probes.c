// SPDX-License-Identifier: MIT
/* Empty BPF programs on uprobes (entry and return): the floor any uprobe tool pays, for the
 * trap-cost calibration (overhead_cal.c), the budget's re-measures (budget.c) and bench/floor.c. */
#include "record/overhead.h"
#include "record/attach.h"
#include "util/util.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int overhead__prog_stats(int prog_fd, uint64_t *runs, uint64_t *ns)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	*runs = info.run_cnt;
	*ns = info.run_time_ns;
	return 0;
}

static int load_probes(struct empty_probes *e, bool multi, const struct bpf_insn *insns,
		       size_t n)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = multi ? TRACE_UPROBE_MULTI : 0);
	static const char *const names[2] = { "empty_enter", "empty_exit" };

	memset(e, 0, sizeof(*e));
	e->multi = multi;
	e->prog_fd[0] = e->prog_fd[1] = -1;
	for (int i = 0; i < 2; i++) {
		e->prog_fd[i] = bpf_prog_load(BPF_PROG_TYPE_KPROBE, names[i], "GPL", insns, n, &opts);
		if (e->prog_fd[i] < 0) {
			int err = -errno;

			empty_probes__close(e);
			return err;
		}
	}
	return 0;
}

int empty_probes__open(struct empty_probes *e, bool multi)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return load_probes(e, multi, insns, 2);
}

int empty_probes__open_clock(struct empty_probes *e, bool multi)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_ktime_get_ns },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return load_probes(e, multi, insns, 3);
}

static void add_fd(struct empty_probes *e, int fd)
{
	e->fds = xrealloc(e->fds, e->nfds + 1, sizeof(int));
	e->fds[e->nfds++] = fd;
}

/* The uprobe PMU's type and the config bit that makes a return probe, from sysfs. */
static int uprobe_pmu(int *type, int *ret_bit)
{
	char buf[64];
	int fd, n;

	fd = open("/sys/bus/event_source/devices/uprobe/type", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	buf[n] = 0;
	*type = atoi(buf);
	*ret_bit = 0;
	fd = open("/sys/bus/event_source/devices/uprobe/format/retprobe", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 7 && !strncmp(buf, "config:", 7)) {
			buf[n] = 0;
			*ret_bit = atoi(buf + 7);
		}
	}
	return 0;
}

static int attach_perf(struct empty_probes *e, const char *path, uint64_t offset, int pid,
		       bool ret)
{
	struct perf_event_attr attr;
	int type = 0, ret_bit = 0, pfd, lfd, err;

	err = uprobe_pmu(&type, &ret_bit);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.config = ret ? 1ULL << ret_bit : 0;
	attr.config1 = (uintptr_t)path;
	attr.config2 = offset;
	pfd = syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0)
		return -errno;
	lfd = bpf_link_create(e->prog_fd[ret], pfd, BPF_PERF_EVENT, NULL);
	if (lfd < 0) {
		err = -errno;
		close(pfd);
		return err;
	}
	add_fd(e, lfd);
	add_fd(e, pfd);
	return 0;
}

int empty_probes__attach(struct empty_probes *e, const char *path, const uint64_t *offsets,
			 size_t cnt, int pid, bool ret)
{
	int fd, err;

	if (!e->multi) {
		for (size_t i = 0; i < cnt; i++) {
			err = attach_perf(e, path, offsets[i], pid, ret);
			if (err)
				return err;
		}
		return 0;
	}
	fd = attach__uprobe_multi(e->prog_fd[ret], path, offsets, NULL, cnt, pid, ret);
	if (fd < 0)
		return -errno;
	add_fd(e, fd);
	return 0;
}

void empty_probes__detach(struct empty_probes *e)
{
	for (size_t i = e->nfds; i-- > 0;)
		close(e->fds[i]);
	free(e->fds);
	e->fds = NULL;
	e->nfds = 0;
}

void empty_probes__close(struct empty_probes *e)
{
	empty_probes__detach(e);
	for (int i = 0; i < 2; i++)
		if (e->prog_fd[i] >= 0)
			close(e->prog_fd[i]);
	e->prog_fd[0] = e->prog_fd[1] = -1;
}
