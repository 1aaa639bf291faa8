// SPDX-License-Identifier: MIT
/*
 * threads_churn: creates many short-lived threads, one after another. Each names itself, calls
 * the probed function churn_work() a few times and exits. With --names hostile the names (and
 * the main thread's) hold quotes, backslashes, control characters and invalid UTF-8, as a
 * hostile target may choose them. The ground-truth log (--log) says which threads existed, the
 * names the kernel kept for them, and every call.
 *
 *   threads_churn [--threads N] [--calls K] [--names plain|hostile] [--log FILE] [--wait-signal]
 *
 * --wait-signal: print "ready PID" (flushed) and wait for SIGUSR1 before creating any thread.
 *
 * Log (written at exit; names are hex, as the kernel holds them, up to 15 bytes):
 *   # pid PID
 *   # main HEXNAME
 *   # thread TID HEXNAME          one per thread, in creation order
 *   TID churn_work START_NS END_NS   one per call, CLOCK_MONOTONIC
 *
 * Build like the other targets: gcc -O2 -g -fno-omit-frame-pointer -fcf-protection=none -pthread
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_CALLS 64

struct call {
	uint64_t start, end;
};

struct thread_log {
	pid_t tid;
	char name[16];
	int ncalls;
	struct call calls[MAX_CALLS];
};

static int calls_per_thread = 3;
static struct thread_log *logs;

/* Names a target may give its threads (prctl keeps 15 bytes): JSON's special characters,
 * control characters, invalid and cut UTF-8, valid UTF-8, and text that looks like the ftrace
 * line format the trace embeds. */
static const char *const hostile_names[] = {
	"q\"uo\"te",
	"back\\sl\\ash",
	"tab\there",
	"new\nline",
	"ctl\x01\x1f\x7f" "end",
	"\xff\xfe\xfd",
	"bad\xc3\x28utf8",
	"caf\xc3\xa9",
	"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
	"abcdefghijklm\xe6\x97\xa5", /* 16 bytes: the kernel cuts the last character in two */
	"emoji\xf0\x9f\x98\x80",
	"x) (y",
	"a]b[c [001]",
	"w-123 (45)",
	"p ==> q=1",
	"</script>",
	"\\u0000",
	"",
};
#define N_HOSTILE (sizeof(hostile_names) / sizeof(hostile_names[0]))

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The probed function: external, never inlined or cloned, starts with `push %rbp`. */
__attribute__((noinline, noipa, used)) int churn_work(int x);
__attribute__((noinline, noipa, used)) int churn_work(int x)
{
	struct thread_log *l = &logs[x];
	uint64_t t0 = now_ns();
	volatile int spin = 0;

	for (int i = 0; i < 200; i++)
		spin += i;
	if (l->ncalls < MAX_CALLS)
		l->calls[l->ncalls].start = t0;
	if (l->ncalls < MAX_CALLS)
		l->calls[l->ncalls++].end = now_ns();
	return x + spin;
}

static const char *name_of(int i, int hostile)
{
	static __thread char buf[16];

	if (hostile)
		return hostile_names[i % N_HOSTILE];
	snprintf(buf, sizeof(buf), "churn-%d", i);
	return buf;
}

struct start {
	int index, hostile;
};

static void *thread_main(void *arg)
{
	const struct start *s = arg;
	struct thread_log *l = &logs[s->index];

	l->tid = syscall(SYS_gettid);
	prctl(PR_SET_NAME, name_of(s->index, s->hostile));
	prctl(PR_GET_NAME, l->name);
	for (int k = 0; k < calls_per_thread; k++)
		churn_work(s->index);
	return NULL;
}

static void put_hex(FILE *f, const char *s)
{
	if (!*s)
		fputc('-', f); /* an empty name */
	for (; *s; s++)
		fprintf(f, "%02x", (unsigned char)*s);
}

static int write_log(const char *path, int n, const char *main_name)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "# pid %d\n# main ", getpid());
	put_hex(f, main_name);
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		fprintf(f, "# thread %d ", logs[i].tid);
		put_hex(f, logs[i].name);
		fputc('\n', f);
	}
	for (int i = 0; i < n; i++)
		for (int k = 0; k < logs[i].ncalls; k++)
			fprintf(f, "%d churn_work %llu %llu\n", logs[i].tid,
				(unsigned long long)logs[i].calls[k].start,
				(unsigned long long)logs[i].calls[k].end);
	return fclose(f);
}

static void usage(void)
{
	fprintf(stderr, "usage: threads_churn [--threads N] [--calls K] [--names plain|hostile] "
			"[--log FILE] [--wait-signal]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *log_path = NULL;
	int n = 5000, hostile = 0, wait_signal = 0;
	char main_name[16] = "";

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--threads") && v)
			n = atoi(argv[++i]);
		else if (!strcmp(a, "--calls") && v)
			calls_per_thread = atoi(argv[++i]);
		else if (!strcmp(a, "--names") && v && (!strcmp(v, "plain") || !strcmp(v, "hostile")))
			hostile = !strcmp(argv[++i], "hostile");
		else if (!strcmp(a, "--log") && v)
			log_path = argv[++i];
		else if (!strcmp(a, "--wait-signal"))
			wait_signal = 1;
		else
			usage();
	}
	if (n < 1 || n > 1000000 || calls_per_thread < 1 || calls_per_thread > MAX_CALLS)
		usage();
	logs = calloc(n, sizeof(*logs));
	if (!logs)
		return 1;
	/* The main thread's name is the process's name in the trace. */
	if (hostile)
		prctl(PR_SET_NAME, "m\"ain) (x\\\x01");
	prctl(PR_GET_NAME, main_name);
	if (wait_signal) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("ready %d\n", getpid());
		fflush(stdout);
		sigwait(&set, &sig);
	}
	for (int i = 0; i < n; i++) {
		struct start s = { .index = i, .hostile = hostile };
		pthread_t t;

		if (pthread_create(&t, NULL, thread_main, &s) || pthread_join(t, NULL)) {
			fprintf(stderr, "threads_churn: cannot create thread %d\n", i);
			return 1;
		}
	}
	if (log_path && write_log(log_path, n, main_name)) {
		perror(log_path);
		return 1;
	}
	fprintf(stderr, "threads_churn: %d threads, %d calls each\n", n, calls_per_thread);
	return 0;
}
