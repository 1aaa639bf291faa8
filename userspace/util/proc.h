/* SPDX-License-Identifier: MIT */
/* The one reader of /proc/PID/stat and /proc/PID/task/TID/stat. */
#ifndef TRACER_PROC_H
#define TRACER_PROC_H

#include <stddef.h>
#include <stdint.h>

/* The fields of proc(5)'s stat line tracer uses. */
struct proc_stat {
	char comm[16];
	char state;			/* 'R', 'S', 'D', ... */
	int ppid;
	unsigned long long utime;	/* clock ticks */
	unsigned long long stime;
	unsigned long long start_time;	/* ticks after boot: with the pid, names one process */
};

/* A process's (tid 0) or one of its threads' stat line. 0 or -errno (-ESRCH: gone). */
int proc_stat__read(int pid, int tid, struct proc_stat *st);

/* The processes descending from pid (children, their children, ...) now, in no particular
 * order; returns how many (*pids to free). */
size_t proc__descendants(int pid, int **pids);

/* utime + stime in nanoseconds. */
uint64_t proc_stat__cpu_ns(const struct proc_stat *st);

#endif
