// SPDX-License-Identifier: MIT
#include "record/probe_events.h"
#include "events.h"
#include "util/util.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TRACEFS "/sys/kernel/tracing"
#define GROUP "tracer_"

static _Atomic unsigned next_event;

static int open_uprobe_events(void)
{
	return open(TRACEFS "/uprobe_events", O_WRONLY | O_APPEND | O_CLOEXEC);
}

/* Each write is one command to the kernel. */
static int command(int fd, const char *line)
{
	return write(fd, line, strlen(line)) < 0 ? -errno : 0;
}

/* Removes event group/name; a perf event of ours just closed may hold it a moment (EBUSY), so
 * wait: another process's event in use is left at once. */
static int remove_event(const char *group, const char *name, bool wait)
{
	const struct timespec ms = { 0, 1000000 };
	char line[128];
	int fd = open_uprobe_events(), err = -EBUSY;

	if (fd < 0)
		return -errno;
	snprintf(line, sizeof(line), "-:%s/%s\n", group, name);
	for (int tries = 0; err == -EBUSY && tries < (wait ? 1000 : 1); tries++) {
		err = command(fd, line);
		if (err == -EBUSY && wait)
			nanosleep(&ms, NULL);
	}
	close(fd);
	return err;
}

/* A tracer_PID group whose process is gone (killed: nothing else leaves one; bench/floor's are
 * named the same way). */
static bool left_behind(const char *group)
{
	char path[64];
	int pid = atoi(group + strlen(GROUP));

	snprintf(path, sizeof(path), "/proc/%d", pid);
	return pid > 0 && pid != getpid() && access(path, F_OK) != 0;
}

static void remove_left_behind(void)
{
	DIR *events = opendir(TRACEFS "/events"), *group;
	struct dirent *g, *e;
	char path[PATH_MAX];

	for (g = events ? readdir(events) : NULL; g; g = readdir(events)) {
		if (strncmp(g->d_name, GROUP, strlen(GROUP)) || !left_behind(g->d_name))
			continue;
		snprintf(path, sizeof(path), TRACEFS "/events/%s", g->d_name);
		group = opendir(path);
		for (e = group ? readdir(group) : NULL; e; e = readdir(group))
			if (e->d_name[0] == 'e' &&
			    remove_event(g->d_name, e->d_name, false) == 0)
				pr_debug("removed uprobe event %s/%s, left by a tracer no longer "
					 "running", g->d_name, e->d_name);
		if (group)
			closedir(group);
	}
	if (events)
		closedir(events);
}

bool probe_events__supported(void)
{
	static int supported = -1;
	int fd;

	if (supported >= 0)
		return supported;
	supported = 0;
	if (getenv("TRACER_NO_UPROBE_EVENTS")) /* the tests: the per-function links */
		return false;
	fd = open_uprobe_events();
	if (fd < 0 && errno == ENOENT && !mount("nodev", TRACEFS, "tracefs", 0, NULL))
		fd = open_uprobe_events();
	if (fd < 0) {
		pr_debug("no tracefs uprobe events (%s: %s): a perf-event uprobe per function",
			 TRACEFS "/uprobe_events", strerror(errno));
		return false;
	}
	close(fd);
	remove_left_behind();
	supported = 1;
	return true;
}

/* The event's tracepoint id, as tracefs has it. */
static long event_id(const char *group, const char *name)
{
	char path[PATH_MAX], id[32];
	int fd, n;

	snprintf(path, sizeof(path), TRACEFS "/events/%s/%s/id", group, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, id, sizeof(id) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	id[n] = 0;
	return strtol(id, NULL, 10);
}

/* Every offset appended to one event: the first line makes it. */
static int define_event(const char *group, const char *name, const char *path,
			const uint64_t *offsets, const uint64_t *ref_ctr_offsets, size_t cnt,
			bool ret)
{
	char line[PATH_MAX + 128];
	int fd = open_uprobe_events(), err = 0;

	if (fd < 0)
		return -errno;
	for (size_t i = 0; i < cnt && !err; i++) {
		int n = snprintf(line, sizeof(line), "%c:%s/%s %s:%#llx", ret ? 'r' : 'p', group,
				 name, path, (unsigned long long)offsets[i]);

		if (ref_ctr_offsets && ref_ctr_offsets[i])
			snprintf(line + n, sizeof(line) - n, "(%#llx)",
				 (unsigned long long)ref_ctr_offsets[i]);
		strcat(line, "\n");
		err = command(fd, line);
	}
	close(fd);
	return err;
}

/* Each entry offset's cookie (probe id, and COOKIE_ODD_LINK), by the event's id: before the
 * event is opened, its first hit finds it. */
static int add_sites(struct probe_event *ev, const uint64_t *offsets, const uint64_t *cookies,
		     size_t cnt)
{
	struct site_key key = { .event = ev->id };

	ev->offsets = xcalloc(cnt, sizeof(*ev->offsets));
	for (size_t i = 0; i < cnt; i++) {
		key.offset = offsets[i];
		if (bpf_map_update_elem(ev->sites_fd, &key, &cookies[i], BPF_ANY))
			return -errno;
		ev->offsets[ev->cnt++] = offsets[i];
	}
	return 0;
}

int probe_events__open(struct probe_event *ev, int prog_fd, int sites_fd, const char *path,
		       const uint64_t *offsets, const uint64_t *ref_ctr_offsets,
		       const uint64_t *cookies, size_t cnt, int pid, bool ret, uint64_t link_cookie)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts, .perf_event.bpf_cookie = link_cookie);
	struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_TRACEPOINT,
					.sample_period = 1, .wakeup_events = 1 };
	char group[32];
	long id;
	int err;

	memset(ev, 0, sizeof(*ev));
	ev->link_fd = ev->perf_fd = -1;
	ev->sites_fd = sites_fd;
	/* a command line is split at white space */
	if (strpbrk(path, " \t\n"))
		return -ENAMETOOLONG;
	snprintf(group, sizeof(group), GROUP "%d", getpid());
	snprintf(ev->name, sizeof(ev->name), "e%u", next_event++);
	err = define_event(group, ev->name, path, offsets, ref_ctr_offsets, cnt, ret);
	id = err ? err : event_id(group, ev->name);
	if (id < 0) {
		err = id;
		goto fail;
	}
	ev->id = id;
	err = ret || sites_fd < 0 ? 0 : add_sites(ev, offsets, cookies, cnt);
	if (err)
		goto fail;
	attr.config = id;
	/* by process: the kernel probes only its memory; for every process, one event on one CPU
	 * (the program runs wherever the probe is hit, once per perf event linked) */
	ev->perf_fd = syscall(SYS_perf_event_open, &attr, pid > 0 ? pid : -1, pid > 0 ? -1 : 0, -1,
			      PERF_FLAG_FD_CLOEXEC);
	if (ev->perf_fd < 0) {
		err = -errno;
		goto fail;
	}
	ev->link_fd = bpf_link_create(prog_fd, ev->perf_fd, BPF_PERF_EVENT, &opts);
	/* before 5.15 no perf link (nor cookie: the compat programs need none): the program is
	 * set on the event, and goes with its fd (link_fd: a second fd of it) */
	if (ev->link_fd < 0 && errno == EINVAL && !ioctl(ev->perf_fd, PERF_EVENT_IOC_SET_BPF, prog_fd))
		ev->link_fd = fcntl(ev->perf_fd, F_DUPFD_CLOEXEC, 0);
	if (ev->link_fd < 0) {
		err = -errno;
		goto fail;
	}
	return 0;
fail:
	probe_events__close(ev);
	return err;
}

void probe_events__close(struct probe_event *ev)
{
	char group[32];
	int err;

	if (ev->link_fd >= 0)
		close(ev->link_fd);
	if (ev->perf_fd >= 0)
		close(ev->perf_fd);
	ev->link_fd = ev->perf_fd = -1;
	snprintf(group, sizeof(group), GROUP "%d", getpid());
	err = ev->name[0] ? remove_event(group, ev->name, true) : 0;
	if (err && err != -ENOENT)
		pr_debug("cannot remove uprobe event %s/%s: %s", group, ev->name, strerror(-err));
	ev->name[0] = 0;
	for (size_t i = 0; i < ev->cnt; i++) {
		struct site_key key = { .event = ev->id, .offset = ev->offsets[i] };

		bpf_map_delete_elem(ev->sites_fd, &key);
	}
	free(ev->offsets);
	ev->offsets = NULL;
	ev->cnt = 0;
}
