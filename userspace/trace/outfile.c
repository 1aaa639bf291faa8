// SPDX-License-Identifier: MIT
#include "trace/outfile.h"
#include "trace/trace_file.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define OUT_BUF (1 << 20)

struct outfile {
	gzFile gz;
	int err;
	size_t len;
	char path[PATH_MAX];
	struct trace_file_tmp tmp;
	char buf[OUT_BUF];
};

int outfile__open(struct outfile **fp, const char *path, char *err, size_t errlen)
{
	struct outfile *f = xcalloc(1, sizeof(*f));
	size_t l = path ? strlen(path) : 0;
	bool gz = l > 3 && !strcmp(path + l - 3, ".gz");
	int fd;

	if (!path)
		path = "-";
	fd = trace_file__create(path, TF_RENAME, &f->tmp, err, errlen);
	if (fd < 0) {
		free(f);
		return fd;
	}
	snprintf(f->path, sizeof(f->path), "%s", path);
	/* "T": zlib's transparent mode, plain bytes through the same calls */
	f->gz = gzdopen(fd, gz ? "wb6" : "wT");
	if (!f->gz) {
		close(fd);
		trace_file__commit(&f->tmp, path, false);
		free(f);
		snprintf(err, errlen, "cannot write %s: out of memory", path);
		return -ENOMEM;
	}
	*fp = f;
	return 0;
}

static void flush(struct outfile *f)
{
	int errnum;

	if (!f->err && f->len && gzwrite(f->gz, f->buf, f->len) != (int)f->len) {
		gzerror(f->gz, &errnum);
		f->err = errnum == Z_ERRNO && errno ? -errno : -EIO;
	}
	f->len = 0;
}

void outfile__write(struct outfile *f, const char *p, size_t n)
{
	while (n) {
		size_t room = OUT_BUF - f->len, take = n < room ? n : room;

		memcpy(f->buf + f->len, p, take);
		f->len += take;
		p += take;
		n -= take;
		if (f->len == OUT_BUF)
			flush(f);
	}
}

void outfile__puts(struct outfile *f, const char *s)
{
	outfile__write(f, s, strlen(s));
}

void outfile__printf(struct outfile *f, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(tmp)) {
		outfile__write(f, tmp, n);
		return;
	}
	char *big = xcalloc(1, n + 1);

	va_start(ap, fmt);
	vsnprintf(big, n + 1, fmt, ap);
	va_end(ap);
	outfile__write(f, big, n);
	free(big);
}

int outfile__close(struct outfile *f, bool keep)
{
	int ret, err;

	flush(f);
	ret = gzclose(f->gz);
	if (ret != Z_OK && !f->err)
		f->err = ret == Z_ERRNO && errno ? -errno : -EIO;
	err = f->err;
	err = trace_file__commit(&f->tmp, f->path, keep && !err) ?: err;
	free(f);
	return err;
}

static ssize_t cookie_write(void *cookie, const char *p, size_t n)
{
	outfile__write(cookie, p, n);
	return n;
}

FILE *outfile__stdio(struct outfile *f)
{
	return fopencookie(f, "w", (cookie_io_functions_t){ .write = cookie_write });
}
