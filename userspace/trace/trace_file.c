// SPDX-License-Identifier: MIT
#include "trace/trace_file.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A new file of the invoking user's, readable by them only, at a name nobody could have
 * prepared: path itself (O_EXCL | O_NOFOLLOW), or a fresh random name beside it (mkostemp:
 * O_EXCL, tried again while a name exists). */
static int create_new(const char *path, enum trace_file_how how, char *tmp, size_t tmplen,
		      uid_t uid, gid_t gid, char *err, size_t errlen)
{
	int fd, e;

	if (how == TF_IN_PLACE) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	} else if (snprintf(tmp, tmplen, "%s.tmpXXXXXX", path) >= (int)tmplen) {
		errno = ENAMETOOLONG;
		fd = -1;
	} else {
		fd = mkostemp(tmp, O_CLOEXEC);
	}
	if (fd < 0) {
		e = errno;
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

int trace_file__create(const char *path, enum trace_file_how how, char *tmp, size_t tmplen,
		       char *err, size_t errlen)
{
	uid_t uid;
	gid_t gid;
	int fd, e;

	err[0] = 0;
	if (tmp && tmplen)
		tmp[0] = 0;
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
	return create_new(path, how, tmp, tmplen, uid, gid, err, errlen);
}

int trace_file__commit(const char *tmp, const char *path, bool keep)
{
	int e = keep && rename(tmp, path) ? -errno : 0;

	if (!keep || e)
		unlink(tmp);
	return e;
}
