// SPDX-License-Identifier: MIT
/* Asks the kernel for each BPF feature the programs use (a tiny probe program per helper or map
 * type, libbpf's probes) so that a kernel too old says what it lacks instead of the verifier's
 * bare "Invalid argument". The uprobe programs are BPF_PROG_TYPE_KPROBE: helpers are asked for
 * that type. What has a fallback is not here (uprobe_multi 6.6: a perf-event uprobe per function;
 * PIDFD_THREAD 6.9: a task iterator reads the calls open at the stop). TRACER_NO_BPF_FEATURE=NAME
 * takes one as missing, to test the message on a kernel that has them all. */
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
};

static const struct feature features[] = {
	{ "ring buffer", "5.8", BPF_MAP_TYPE_RINGBUF, 0 },
	{ "task storage", "5.11", BPF_MAP_TYPE_TASK_STORAGE, 0 },
	{ "task storage in tracing programs", "5.11", 0, BPF_FUNC_task_storage_get },
	{ "bpf_get_current_task_btf", "5.11", 0, BPF_FUNC_get_current_task_btf },
	{ "BPF cookies", "5.15", 0, BPF_FUNC_get_attach_cookie },
	{ "bpf_loop", "5.17", 0, BPF_FUNC_loop },
};

static bool has(const struct feature *f)
{
	const char *fake = getenv("TRACER_NO_BPF_FEATURE");

	if (fake && !strcmp(fake, f->name))
		return false;
	if (f->map)
		return libbpf_probe_bpf_map_type(f->map, NULL) == 1;
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, f->helper, NULL) == 1;
}

int kernel_check__bpf(char *err, size_t n)
{
	const char *newest = NULL;
	char missing[256] = "";
	struct utsname u;

	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		if (has(&features[i]))
			continue;
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s (%s)",
			 missing[0] ? ", " : "", features[i].name, features[i].since);
		newest = features[i].since; /* the table is in kernel order */
	}
	if (!newest)
		return 0;
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	snprintf(err, n, "kernel %s lacks BPF features tracer needs: %s; nothing can be recorded "
		 "here: run tracer on Linux %s or later", u.release, missing, newest);
	return -ENOTSUP;
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
