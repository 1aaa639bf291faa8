// SPDX-License-Identifier: MIT
#include "trace/trace_input.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define SPOOL_MAX (16ull << 30) /* bytes spooled at most: a larger trace is a file */

/* Paths already copied, and the copy; kept open until the program exits (one descriptor each:
 * merge takes as many inputs as the command line holds). */
static struct spool {
	char *path;
	int fd;
} *spools;
static int nspools;
static uint64_t spooled_max; /* the last spool's bound */

static int reopen(int fd)
{
	char proc[64];
	int r;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	r = open(proc, O_RDONLY | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

/* A trace starts as JSON does, or as gzip or a UTF-8 byte order mark. */
static bool may_be_trace(char c)
{
	return strchr("{[ \t\r\n\x1f\xef", c) && c;
}

/* Copies from into to, up to max bytes: -EFBIG past them, -ENOEXEC at once when the first bytes
 * are no trace's (/dev/zero). */
static int copy_all(int from, int to, uint64_t max)
{
	char buf[1 << 16];
	uint64_t total = 0;
	ssize_t n;

	while ((n = read(from, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!total && !may_be_trace(buf[0]))
			return -ENOEXEC;
		total += n;
		if (total > max)
			return -EFBIG;
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(to, buf + w, n - w);

			if (k < 0 && errno != EINTR)
				return -errno;
			w += k > 0 ? k : 0;
		}
	}
	return 0;
}

/* A pipe that never ends (a generator) must not fill the disk: the copy takes at most half the
 * space free when it starts, and SPOOL_MAX (TRACER_SPOOL_MAX, "64M", lowers it for tests). */
static uint64_t spool_max(int tmp)
{
	struct statvfs fs;
	uint64_t max = UINT64_MAX, env;

	if (!fstatvfs(tmp, &fs))
		max = (uint64_t)fs.f_bavail * fs.f_frsize / 2;
	if (max > SPOOL_MAX)
		max = SPOOL_MAX;
	if (getenv("TRACER_SPOOL_MAX") && !parse_size(getenv("TRACER_SPOOL_MAX"), &env) &&
	    env < max)
		max = env;
	return max;
}

static int spool(const char *path, int in)
{
	const char *dir = getenv("TMPDIR");
	int tmp, err;

	tmp = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (tmp < 0)
		return -errno;
	spooled_max = spool_max(tmp);
	err = copy_all(in, tmp, spooled_max);
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

uint64_t trace_input__spool_max(void)
{
	return spooled_max;
}
