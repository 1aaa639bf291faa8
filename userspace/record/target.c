// SPDX-License-Identifier: MIT
#include "record/target.h"
#include "util/proc.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

void target__thread_name(int pid, int tid, char name[16])
{
	char path[64];
	ssize_t n;
	int fd;

	name[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, name, 15);
	close(fd);
	if (n <= 0)
		n = 0;
	name[n] = 0;
	if (n && name[n - 1] == '\n')
		name[n - 1] = 0;
}

static bool is_elf_object(const char *open_path)
{
	unsigned char magic[4];
	int fd = open(open_path, O_RDONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = read(fd, magic, 4) == 4 && !memcmp(magic, "\177ELF", 4);
	close(fd);
	return ok;
}

int target__read_maps(struct target *t)
{
	char path[64], line[PATH_MAX + 256];
	struct stat exe = { 0 };
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/exe", t->pid);
	if (stat(path, &exe))
		exe.st_ino = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", t->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, off, ino;
		unsigned int maj, min;
		char perms[8], *file;
		int pos = 0;
		struct mapped_object *o;
		bool seen = false;

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &start, &end, perms, &off, &maj, &min,
			   &ino, &pos) < 7 || !pos)
			continue;
		file = line + pos;
		file[strcspn(file, "\n")] = 0;
		if (perms[2] != 'x' || file[0] != '/' || !ino)
			continue;
		for (size_t i = 0; i < t->nobjs && !seen; i++)
			seen = t->objs[i].ino == ino && t->objs[i].dev == makedev(maj, min);
		if (seen)
			continue;
		t->objs = xrealloc(t->objs, t->nobjs + 1, sizeof(*t->objs));
		o = &t->objs[t->nobjs];
		memset(o, 0, sizeof(*o));
		/* " (deleted)" marks a file replaced on disk; the mapping still works */
		if (strlen(file) > 10 && !strcmp(file + strlen(file) - 10, " (deleted)"))
			file[strlen(file) - 10] = 0;
		if (asprintf(&o->open_path, "/proc/%d/map_files/%lx-%lx", t->pid, start, end) < 0)
			abort();
		/* map_files needs CAP_SYS_ADMIN; without it (tracer list as a user), the file
		 * through the target's root is the next best */
		if (!is_elf_object(o->open_path) && geteuid()) {
			free(o->open_path);
			if (asprintf(&o->open_path, "/proc/%d/root%s", t->pid, file) < 0)
				abort();
		}
		if (!is_elf_object(o->open_path)) {
			free(o->open_path);
			continue;
		}
		o->path = xstrdup(file);
		o->base = xstrdup(strrchr(file, '/') + 1);
		o->dev = makedev(maj, min);
		o->ino = ino;
		/* by inode: maps may name an overlay's lower device where stat names the upper */
		o->is_exe = exe.st_ino == ino;
		t->nobjs++;
	}
	fclose(f);
	return 0;
}

int target__open(int pid, struct target *t, char *err, size_t errlen)
{
	struct proc_stat ps, again;
	char exe[64], safe[80];
	struct stat st;
	int ret;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->pidfd = -1;
	if (pid <= 0) {
		snprintf(err, errlen, "bad pid %d: give the pid of a running process", pid);
		return -EINVAL;
	}
	ret = proc_stat__read(pid, 0, &ps);
	if (ret) {
		snprintf(err, errlen, "no process with pid %d (is it still running? try pidof)", pid);
		return -ESRCH;
	}
	t->start_time = ps.start_time;
	memcpy(t->comm, ps.comm, sizeof(t->comm));
	if (ps.state == 'Z' || ps.state == 'X') {
		snprintf(err, errlen, "pid %d (%s) has exited: a zombie its parent has not reaped; "
				      "nothing to trace", pid, printable(t->comm, safe, sizeof(safe)));
		return -ESRCH;
	}
	if (pid == getpid()) {
		snprintf(err, errlen, "pid %d is tracer itself; give the pid of the pipeline", pid);
		return -EINVAL;
	}
	t->pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (t->pidfd < 0) {
		snprintf(err, errlen, "cannot open pid %d: %s (give the pid of a process, not a thread)",
			 pid, strerror(errno));
		return -ESRCH;
	}
	/* The pidfd pins the process the start time was read from, unless the pid was reused
	 * between the two reads: check again. */
	if (proc_stat__read(pid, 0, &again) || again.start_time != t->start_time) {
		snprintf(err, errlen, "process %d exited while tracer attached", pid);
		target__close(t);
		return -ESRCH;
	}
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	if (stat(exe, &st)) {
		/* a kernel thread has no executable (ENOENT); another user's process hides it */
		ret = errno == EACCES || errno == EPERM ? -EACCES : -EINVAL;
		if (ret == -EACCES)
			snprintf(err, errlen, "cannot read the executable and maps of pid %d (%s): "
				 "permission denied; run as root (sudo) or as the user it runs as",
				 pid, printable(t->comm, safe, sizeof(safe)));
		else
			snprintf(err, errlen, "pid %d (%s) is a kernel thread or has no "
				 "executable; give the pid of a user-space process",
				 pid, printable(t->comm, safe, sizeof(safe)));
		target__close(t);
		return ret;
	}
	ret = target__read_maps(t);
	if (ret) {
		snprintf(err, errlen, "cannot read /proc/%d/maps: %s", pid, strerror(-ret));
		target__close(t);
		return ret;
	}
	return 0;
}

bool target__alive(const struct target *t)
{
	struct proc_stat ps;

	if (t->pidfd < 0)
		return false;
	/* pidfd_send_signal with signal 0 fails with ESRCH once the process has exited */
	if (syscall(SYS_pidfd_send_signal, t->pidfd, 0, NULL, 0))
		return false;
	if (proc_stat__read(t->pid, 0, &ps) || ps.start_time != t->start_time)
		return false;
	return ps.state != 'Z' && ps.state != 'X';
}

void target__close(struct target *t)
{
	for (size_t i = 0; i < t->nobjs; i++) {
		free(t->objs[i].path);
		free(t->objs[i].base);
		free(t->objs[i].open_path);
	}
	free(t->objs);
	t->objs = NULL;
	t->nobjs = 0;
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}
