// SPDX-License-Identifier: MIT
#include "trace/trace_input.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Paths already copied, and the copy; kept open until the program exits (one descriptor each:
 * merge takes as many inputs as the command line holds). */
static struct spool {
	char *path;
	int fd;
} *spools;
static int nspools;

static int reopen(int fd)
{
	char proc[64];
	int r;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	r = open(proc, O_RDONLY | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

static int copy_all(int from, int to)
{
	char buf[1 << 16];
	ssize_t n;

	while ((n = read(from, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(to, buf + w, n - w);

			if (k < 0 && errno != EINTR)
				return -errno;
			w += k > 0 ? k : 0;
		}
	}
	return 0;
}

static int spool(const char *path, int in)
{
	const char *dir = getenv("TMPDIR");
	int tmp, err;

	tmp = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (tmp < 0)
		return -errno;
	err = copy_all(in, tmp);
	if (err) {
		close(tmp);
		return err;
	}
	spools = xrealloc(spools, nspools + 1, sizeof(*spools));
	spools[nspools].path = xstrdup(path);
	spools[nspools++].fd = tmp;
	return reopen(tmp);
}

int trace_input__open(const char *path)
{
	struct stat st;
	int fd, r;

	/* never open a pipe twice: the second open would find it drained, or block */
	for (int i = 0; i < nspools; i++)
		if (!strcmp(spools[i].path, path))
			return reopen(spools[i].fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		return fd;
	r = spool(path, fd);
	close(fd);
	return r;
}
