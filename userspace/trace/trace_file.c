// SPDX-License-Identifier: MIT
#include "trace/trace_file.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int trace_file__create(const char *path, char *err, size_t errlen)
{
	uid_t uid;
	gid_t gid;
	struct stat st;
	int fd, e;

	invoking_user(&uid, &gid);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
			close(fd);
			snprintf(err, errlen, "%s exists and is not a regular file; choose another file "
					      "with -o", path);
			return -EINVAL;
		}
		if (fd >= 0 && st.st_uid != uid) {
			close(fd);
			snprintf(err, errlen, "%s exists and belongs to another user; not overwriting "
					      "it (choose another file with -o)", path);
			return -EPERM;
		}
		if (fd >= 0 && (ftruncate(fd, 0) || fchmod(fd, 0600))) {
			e = -errno;
			close(fd);
			snprintf(err, errlen, "cannot write %s: %s", path, strerror(-e));
			return e;
		}
	}
	if (fd < 0) {
		e = -errno;
		if (e == -ELOOP)
			snprintf(err, errlen, "%s is a symbolic link; not writing through it (choose "
					      "another file with -o)", path);
		else
			snprintf(err, errlen, "cannot write %s: %s; choose another file with -o", path,
				 strerror(-e));
		return e;
	}
	/* under sudo the trace belongs to the user who asked for it */
	if (geteuid() == 0 && fchown(fd, uid, gid))
		pr_debug("cannot hand %s to uid %u: %s", path, uid, strerror(errno));
	return fd;
}
