// SPDX-License-Identifier: MIT
/* Asks the kernel for each BPF feature the programs use (a tiny probe program per helper or map
 * type, libbpf's probes) so that a kernel too old says what it lacks instead of the verifier's
 * bare "Invalid argument". The uprobe programs are BPF_PROG_TYPE_KPROBE: helpers are asked for
 * that type. Where the compat object (bpf/tracer.bpf.h: TRACER_COMPAT) stands in for a missing
 * feature, tracer records with it; what has a fallback of its own is not here (uprobe_multi
 * 6.6: tracefs uprobe events; PIDFD_THREAD 6.9: a task iterator reads the calls open at the
 * stop). TRACER_NO_BPF_FEATURE=NAME[,NAME...] takes those as missing, to test the messages on a
 * kernel that has them all. */
#include "record/kernel_check.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* kernel 6.9: a pidfd for a thread */
#endif

struct feature {
	const char *name;
	const char *since; /* the first kernel that has it */
	enum bpf_map_type map; /* a map type, or */
	enum bpf_func_id helper; /* a helper of uprobe programs */
	bool compat; /* the compat object does without it */
};

static const struct feature features[] = {
	{ "ring buffer", "5.8", BPF_MAP_TYPE_RINGBUF, 0, false },
	{ "task storage", "5.11", BPF_MAP_TYPE_TASK_STORAGE, 0, true },
	{ "task storage in tracing programs", "5.11", 0, BPF_FUNC_task_storage_get, true },
	{ "bpf_get_current_task_btf", "5.11", 0, BPF_FUNC_get_current_task_btf, true },
	{ "BPF cookies", "5.15", 0, BPF_FUNC_get_attach_cookie, true },
	{ "bpf_task_pt_regs", "5.15", 0, BPF_FUNC_task_pt_regs, true },
	{ "bpf_loop", "5.17", 0, BPF_FUNC_loop, true },
};

static bool faked_missing(const char *name)
{
	const char *fake = getenv("TRACER_NO_BPF_FEATURE");
	size_t n = strlen(name);

	for (const char *p = fake; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

static bool has(const struct feature *f)
{
	if (faked_missing(f->name))
		return false;
	if (f->map)
		return libbpf_probe_bpf_map_type(f->map, NULL) == 1;
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, f->helper, NULL) == 1;
}

int kernel_check__bpf(char *err, size_t n)
{
	const char *newest = NULL;
	char missing[256] = "";
	bool refused = false;
	struct utsname u;

	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		if (has(&features[i]))
			continue;
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s (%s)",
			 missing[0] ? ", " : "", features[i].name, features[i].since);
		newest = features[i].since; /* the table is in kernel order */
		refused |= !features[i].compat;
	}
	if (!newest)
		return 0;
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	if (refused) {
		snprintf(err, n, "kernel %s lacks BPF features tracer needs: %s; nothing can be "
			 "recorded here: run tracer on Linux %s or later", u.release, missing, newest);
		return -ENOTSUP;
	}
	snprintf(err, n, "kernel %s lacks %s: recording with the programs for older kernels: no "
		 "Python frames, calls by tracefs uprobe events (Linux %s or later has it all)",
		 u.release, missing, newest);
	return 1;
}

bool kernel_check__pidfd_thread(void)
{
	int fd;

	if (getenv("TRACER_NO_PIDFD_THREAD"))
		return false;
	/* before 6.9 the flag is refused (EINVAL) whatever the thread */
	fd = syscall(SYS_pidfd_open, getpid(), PIDFD_THREAD);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}
