/* SPDX-License-Identifier: MIT */
/* A traced process: held by a pidfd, checked by start time, with the ELF objects it maps. */
#ifndef TRACER_TARGET_H
#define TRACER_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mapped_object {
	char *path;	 /* as /proc/PID/maps names it (inside the target's mount namespace) */
	char *base;	 /* basename of path */
	char *open_path; /* /proc/PID/map_files/START-END: the mapped inode itself, even when the
			  * file was replaced on disk or lives in another mount namespace */
	dev_t dev;
	ino_t ino;
	bool is_exe; /* the process's executable (/proc/PID/exe) */
};

struct target {
	int pid;
	int pidfd;
	unsigned long long start_time; /* /proc/PID/stat field 22: tells a reused pid apart */
	char comm[16];
	struct mapped_object *objs;
	size_t nobjs;
};

/* Opens pid: -ESRCH if there is no such process, -EINVAL for a kernel thread; err says so. */
int target__open(int pid, struct target *t, char *err, size_t errlen);
/* Re-reads the mapped objects (after dlopen). */
int target__read_maps(struct target *t);
/* True while the process the target was opened on is alive (not a new one with its pid). */
bool target__alive(const struct target *t);
void target__close(struct target *t);

/* Name of a thread as the kernel knows it (comm); "" if it is gone. */
void target__thread_name(int pid, int tid, char name[16]);

#endif
