// SPDX-License-Identifier: MIT
#include "trace/trace_file.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* An existing path the user may replace: a regular file of theirs. 0, or -errno with err. */
static int check_replaceable(const char *path, uid_t uid, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (S_ISLNK(st.st_mode)) {
		snprintf(err, errlen, "%s is a symbolic link; not writing through it (choose "
				      "another file)", path);
		return -ELOOP;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a regular file; choose another file",
			 path);
		return -EINVAL;
	}
	if (st.st_uid != uid) {
		snprintf(err, errlen, "%s exists and belongs to another user (uid %u); not "
				      "replacing it (choose another file)", path, (unsigned)st.st_uid);
		return -EPERM;
	}
	if (st.st_nlink > 1) {
		snprintf(err, errlen, "%s has other hard links; not replacing it (choose another "
				      "file)", path);
		return -EMLINK;
	}
	return 0;
}

/* The directories on the way to path: a symbolic link among them must be root's or the user's.
 * Another user's link (planted in /tmp, say) could send root's writes anywhere. */
static int check_dirs(const char *path, uid_t uid, char *err, size_t errlen)
{
	char prefix[PATH_MAX];
	struct stat st;
	size_t n = strlen(path);

	if (n >= sizeof(prefix))
		return -ENAMETOOLONG;
	for (size_t i = 1; i < n; i++) {
		if (path[i] != '/')
			continue;
		memcpy(prefix, path, i);
		prefix[i] = 0;
		if (lstat(prefix, &st) || !S_ISLNK(st.st_mode) || st.st_uid == 0 || st.st_uid == uid)
			continue;
		snprintf(err, errlen, "%s is a symbolic link of another user (uid %u); not writing "
				      "through it (choose another file)", prefix,
			 (unsigned)st.st_uid);
		return -ELOOP;
	}
	return 0;
}

/* As perf does with perf.data: the previous trace is kept as FILE.old. */
static int keep_old(const char *path, uid_t uid, char *err, size_t errlen)
{
	char old[PATH_MAX];
	int e;

	if (snprintf(old, sizeof(old), "%s.old", path) >= (int)sizeof(old)) {
		snprintf(err, errlen, "%s: name too long", path);
		return -ENAMETOOLONG;
	}
	e = check_replaceable(old, uid, err, errlen);
	if (!e && rename(path, old))
		e = -errno;
	if (e && !err[0])
		snprintf(err, errlen, "cannot keep the previous %s as %s: %s; choose another file",
			 path, old, strerror(-e));
	if (!e)
		pr_info("kept the previous %s as %s", path, old);
	return e;
}

/* The folder of path, with its slash ("." for a bare name). */
static void folder_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (slash)
		snprintf(dir, len, "%.*s", (int)(slash - path) + 1, path);
	else
		snprintf(dir, len, ".");
}

/* A new file at a name nobody could have prepared: path itself (O_EXCL | O_NOFOLLOW), an
 * unnamed file in its folder, or where the file system has none a fresh random name beside it
 * (mkostemp: O_EXCL, tried again while a name exists). */
static int open_new(const char *path, enum trace_file_how how, struct trace_file_tmp *t)
{
	char dir[PATH_MAX];

	if (how == TF_IN_PLACE)
		return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	folder_of(path, dir, sizeof(dir));
	t->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (t->fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
		return t->fd;
	if (snprintf(t->name, sizeof(t->name), "%s.tmpXXXXXX", path) >= (int)sizeof(t->name)) {
		t->name[0] = 0;
		errno = ENAMETOOLONG;
		return -1;
	}
	t->fd = mkostemp(t->name, O_CLOEXEC);
	if (t->fd < 0)
		t->name[0] = 0;
	return t->fd;
}

/* Readable by its owner only, the invoking user's; with TF_RENAME the caller writes to a copy
 * of the fd, so that the file stays open until it has its name. */
static int create_new(const char *path, enum trace_file_how how, struct trace_file_tmp *t,
		      uid_t uid, gid_t gid, char *err, size_t errlen)
{
	int fd = open_new(path, how, t), e = errno;

	if (fd >= 0 && how == TF_RENAME && (fd = fcntl(t->fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		e = errno;
		trace_file__commit(t, path, false);
	}
	if (fd < 0) {
		if (e == EEXIST || e == ELOOP)
			snprintf(err, errlen, "%s appeared while tracer was creating it; choose "
					      "another file", path);
		else
			snprintf(err, errlen, "cannot write %s: %s; choose another file", path,
				 strerror(e));
		return -e;
	}
	/* under sudo the file belongs to the user who asked for it */
	if (geteuid() == 0 && fchown(fd, uid, gid))
		pr_debug("cannot hand %s to uid %u: %s", path, uid, strerror(errno));
	return fd;
}

int trace_file__create(const char *path, enum trace_file_how how, struct trace_file_tmp *tmp,
		       char *err, size_t errlen)
{
	uid_t uid;
	gid_t gid;
	int fd, e;

	err[0] = 0;
	if (tmp) {
		tmp->fd = -1;
		tmp->name[0] = 0;
	}
	if (!strcmp(path, "-")) {
		/* a copy, so that closing the trace leaves standard output open */
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			snprintf(err, errlen, "cannot write to standard output: %s", strerror(errno));
		return fd < 0 ? -errno : fd;
	}
	if (invoking_user(&uid, &gid)) {
		snprintf(err, errlen, "SUDO_UID/SUDO_GID are malformed: cannot tell whose %s is", path);
		return -EINVAL;
	}
	e = check_dirs(path, uid, err, errlen);
	if (!e)
		e = check_replaceable(path, uid, err, errlen);
	if (!e && how == TF_IN_PLACE && !access(path, F_OK))
		e = keep_old(path, uid, err, errlen);
	if (e) {
		if (!err[0])
			snprintf(err, errlen, "cannot write %s: %s; choose another file", path,
				 strerror(-e));
		return e;
	}
	return create_new(path, how, tmp, uid, gid, err, errlen);
}

/* The unnamed file gets a fresh random name beside path (linkat fails on one that exists). */
static int give_name(struct trace_file_tmp *t, const char *path)
{
	char proc[64];
	uint32_t r;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", t->fd);
	for (int i = 0; i < 100; i++) {
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			break;
		snprintf(t->name, sizeof(t->name), "%s.tmp%08x", path, r);
		if (!linkat(AT_FDCWD, proc, AT_FDCWD, t->name, AT_SYMLINK_FOLLOW))
			return 0;
		if (errno != EEXIST)
			break;
	}
	t->name[0] = 0; /* never someone else's file */
	return errno ? -errno : -EEXIST;
}

int trace_file__commit(struct trace_file_tmp *t, const char *path, bool keep)
{
	int e = 0;

	if (t->fd < 0)
		return 0;
	if (keep && !t->name[0])
		e = give_name(t, path);
	if (keep && !e && rename(t->name, path))
		e = -errno;
	if ((!keep || e) && t->name[0])
		unlink(t->name);
	close(t->fd);
	t->fd = -1;
	return e;
}
