// SPDX-License-Identifier: MIT
#include "util/proc.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int proc_stat__read(int pid, int tid, struct proc_stat *st)
{
	char path[64], buf[1024], *open_paren, *p;
	ssize_t n;
	int fd;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	/* comm may hold spaces and parentheses: it ends at the last ')' */
	open_paren = strchr(buf, '(');
	p = strrchr(buf, ')');
	if (!open_paren || !p || p < open_paren)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	snprintf(st->comm, sizeof(st->comm), "%.*s", (int)(p - open_paren - 1), open_paren + 1);
	/* after comm: state (field 3), then utime and stime (14, 15), starttime (22) */
	if (sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
			  "%*d %*d %llu",
		   &st->state, &st->ppid, &st->utime, &st->stime, &st->start_time) != 5)
		return -EINVAL;
	return 0;
}

size_t proc__descendants(int pid, int **pids)
{
	struct { int pid, ppid; } *all = NULL;
	size_t n = 0, cap = 0, found = 0;
	struct dirent *de;
	DIR *d = opendir("/proc");

	*pids = NULL;
	while (d && (de = readdir(d))) {
		struct proc_stat st;
		int p = atoi(de->d_name);

		if (p <= 0 || proc_stat__read(p, 0, &st))
			continue;
		if (n == cap)
			all = xrealloc(all, cap = cap ? 2 * cap : 256, sizeof(*all));
		all[n].pid = p;
		all[n++].ppid = st.ppid;
	}
	if (d)
		closedir(d);
	/* breadth first: the list grows as children of what it holds are found */
	for (size_t k = 0; k <= found; k++) {
		int parent = k ? (*pids)[k - 1] : pid;

		for (size_t i = 0; i < n; i++) {
			if (all[i].ppid != parent)
				continue;
			*pids = xrealloc(*pids, found + 1, sizeof(int));
			(*pids)[found++] = all[i].pid;
		}
	}
	free(all);
	return found;
}

uint64_t proc_stat__cpu_ns(const struct proc_stat *st)
{
	static long tick;

	if (!tick)
		tick = sysconf(_SC_CLK_TCK);
	return (st->utime + st->stime) * (1000000000ULL / tick);
}
