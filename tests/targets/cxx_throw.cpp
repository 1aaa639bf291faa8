// SPDX-License-Identifier: MIT
/* A C++ target that throws through probed frames, the way libraries users call from Python do
 * (cv::error, c10::Error) and the ways C++ programs move exceptions around:
 *   - chains ops::stage1 -> ... -> ops::stageN (N = 1..5) whose innermost throws, caught at every
 *     level (0: by the unprobed driver), with a destructor in each frame (a cleanup landing pad
 *     that itself calls a probed function, ops::cleanup);
 *   - a rethrow (`throw;`) from a catch two levels up, std::throw_with_nested, and
 *     std::rethrow_exception of an exception a pool thread stored in a std::future;
 *   - backtrace() from inside probed frames (it walks the stack through their return slots);
 *   - ops::on_altstack, run from a signal handler on a sigaltstack above the thread's stack,
 *     and ops::throw_in_handler, whose exception the handler catches there.
 * Every line it prints depends only on what it computed, so a traced run prints exactly what an
 * untraced one does. With --log FILE it records each probed call: "tid name start_ns end_ns how"
 * (how: ret, or exc when an exception left the call), CLOCK_MONOTONIC.
 *
 * Usage: cxx_throw [--wait-signal] [--rounds N] [--log FILE]
 *        cxx_throw --bench-calls N | --bench-throws DEPTH,N
 * Prints "ready PID"; with --wait-signal waits for SIGUSR1 first. Runs N rounds (default 20;
 * 0: until SIGINT or SIGTERM) and prints one summary line per round and a last "cxx_throw: R
 * rounds, T throws" line on stderr. The benchmark modes (bench/cxx.py) call ops::leaf N times,
 * or throw N times through DEPTH probed frames, and print "bench ns_per_op X": the process's
 * CPU time per call or throw, probe traps included. Build with frame pointers and without -fcf-protection, so
 * every probed function starts with `push %rbp`. */
#include "ready.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <exception>
#include <execinfo.h>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

#define PROBED __attribute__((noinline, used))

static volatile sig_atomic_t stop;
static FILE *log_file;
static std::mutex log_lock;
static std::atomic<long> throws;

static long now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Logs one probed call when it ends, by return or by an exception passing through it. */
class CallLog {
public:
	explicit CallLog(const char *name) : name(name), start(now_ns()), uncaught(std::uncaught_exceptions()) {}
	~CallLog()
	{
		long end = now_ns();
		bool exc = std::uncaught_exceptions() > uncaught;

		if (!log_file)
			return;
		std::lock_guard<std::mutex> g(log_lock);
		fprintf(log_file, "%d %s %ld %ld %s\n", gettid(), name, start, end, exc ? "exc" : "ret");
	}

private:
	const char *name;
	long start;
	int uncaught;
};

namespace ops {

struct Failure : std::runtime_error {
	int depth;
	Failure(const std::string &what, int depth) : std::runtime_error(what), depth(depth) {}
};

static volatile long sink;
static void *main_base;

/* A destructor's work during unwinding: a probed call from a cleanup landing pad. */
PROBED long cleanup(long x)
{
	CallLog log("ops::cleanup");

	sink += x;
	return sink;
}

struct Resource {
	long id;
	~Resource() { cleanup(id); }
};

/* The frames' own names as backtrace() sees them: a traced run must find the same ones. */
PROBED std::string where()
{
	CallLog log("ops::where");
	void *pcs[32];
	int n = backtrace(pcs, 32);
	std::string s;

	for (int i = 0; i < n; i++) {
		Dl_info info;

		char at[64];

		/* where each return address points: an address no object maps (a return probe's
		 * trampoline left in a slot) shows as "?" */
		if (!dladdr(pcs[i], &info) || !info.dli_fname)
			snprintf(at, sizeof(at), "?");
		else if (info.dli_fbase == main_base)
			snprintf(at, sizeof(at), "+%#lx", (long)((char *)pcs[i] - (char *)main_base));
		else
			snprintf(at, sizeof(at), "%s", strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1 : info.dli_fname);
		s += std::string(s.empty() ? "" : ",") + at;
	}
	return s;
}

/* A probed caller of where(): two probed frames under backtrace(). */
PROBED std::string inspect()
{
	CallLog log("ops::inspect");

	return where();
}

PROBED int stage(int level, int depth, int catch_at, std::string *trail);

/* Each level calls the next; the innermost throws. A level equal to catch_at catches. */
#define STAGE(N)                                                                            \
	PROBED int stage##N(int depth, int catch_at, std::string *trail)                   \
	{                                                                                   \
		CallLog log("ops::stage" #N);                                              \
		Resource r{ N };                                                            \
		if (catch_at == N) {                                                        \
			try {                                                               \
				return stage(N + 1, depth, catch_at, trail);                \
			} catch (const Failure &e) {                                        \
				*trail += "caught@" #N "(" + std::string(e.what()) + ")";   \
				return -N;                                                  \
			}                                                                   \
		}                                                                           \
		return stage(N + 1, depth, catch_at, trail);                                \
	}
STAGE(1)
STAGE(2)
STAGE(3)
STAGE(4)
STAGE(5)

PROBED int stage(int level, int depth, int catch_at, std::string *trail)
{
	if (level > depth) {
		throws++;
		throw Failure("depth " + std::to_string(depth), depth);
	}
	switch (level) {
	case 1:
		return stage1(depth, catch_at, trail);
	case 2:
		return stage2(depth, catch_at, trail);
	case 3:
		return stage3(depth, catch_at, trail);
	case 4:
		return stage4(depth, catch_at, trail);
	default:
		return stage5(depth, catch_at, trail);
	}
}

/* Catches at level 3 and rethrows the same exception with `throw;`; level 1 catches it. */
PROBED int rethrow_inner()
{
	CallLog log("ops::rethrow_inner");

	try {
		std::string t;
		return stage3(4, 0, &t);
	} catch (const Failure &) {
		throw;
	}
}

PROBED int rethrow_outer()
{
	CallLog log("ops::rethrow_outer");

	try {
		return rethrow_inner();
	} catch (const Failure &e) {
		return e.depth;
	}
}

/* std::throw_with_nested: a second exception thrown from a catch, carrying the first. */
PROBED void nested_inner()
{
	CallLog log("ops::nested_inner");

	try {
		std::string t;
		stage1(2, 0, &t);
	} catch (const Failure &) {
		throws++;
		std::throw_with_nested(std::runtime_error("outer"));
	}
}

static std::string unwrap(const std::exception &e)
{
	std::string s = e.what();

	try {
		std::rethrow_if_nested(e);
	} catch (const std::exception &inner) {
		s += "<" + unwrap(inner);
	}
	return s;
}

/* A pool thread's job: throws through probed frames; the future carries it to the caller. */
PROBED int job(int depth)
{
	CallLog log("ops::job");
	std::string t;

	return stage1(depth, 0, &t);
}

/* A C++ function that never throws, for the benchmark: a little work, one `ret`. */
PROBED long leaf(long x)
{
	for (int i = 0; i < 8; i++)
		x = x * 6364136223846793005L + 1442695040888963407L;
	return x;
}

/* Runs on the sigaltstack, from a signal handler: a probed call on another stack. */
PROBED long on_altstack(long x)
{
	CallLog log("ops::on_altstack");

	sink += x;
	return sink;
}

/* Throws from a signal handler's callee, on the alternate stack; the handler catches it. */
PROBED void throw_in_handler()
{
	CallLog log("ops::throw_in_handler");

	throws++;
	throw Failure("in a handler", 0);
}

/* The caller of the signal: a probed frame open on the thread's own stack while the handler
 * runs on the alternate one. */
PROBED long raise_on(int sig)
{
	CallLog log("ops::raise_on");

	raise(sig);
	return sink;
}

} // namespace ops

static void on_stop(int) { stop = 1; }
static void on_usr2(int)
{
	ops::on_altstack(1);
	try {
		ops::throw_in_handler();
	} catch (const ops::Failure &) {
		ops::on_altstack(2);
	}
}

/* The alternate stack sits above the thread stack of the thread that uses it, so the kernel
 * sees the handler's stack pointer above every frame open on the thread's own stack. */
struct AltStackThread {
	static void *run(void *arg)
	{
		stack_t ss = {};

		ss.ss_sp = arg;
		ss.ss_size = 1 << 16;
		sigaltstack(&ss, nullptr);
		ops::raise_on(SIGUSR2);
		ss.ss_flags = SS_DISABLE;
		sigaltstack(&ss, nullptr);
		return nullptr;
	}
};

static std::string altstack_round()
{
	size_t size = 1 << 20;
	/* the thread's stack low in the address space (heap), the alternate one high (mmap) */
	void *thread_stack = aligned_alloc(4096, size);
	void *alt = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_attr_t attr;
	pthread_t t;

	if (!thread_stack || alt == MAP_FAILED || (uintptr_t)alt < (uintptr_t)thread_stack)
		return "altstack: not set up";
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, thread_stack, size);
	pthread_create(&t, &attr, AltStackThread::run, alt);
	pthread_join(t, nullptr);
	pthread_attr_destroy(&attr);
	munmap(alt, 1 << 16);
	free(thread_stack);
	return "altstack ok";
}

static std::string round_of_throws()
{
	std::string out;

	/* throw through 1..5 probed frames, caught at every level and by the driver */
	for (int depth = 1; depth <= 5; depth++)
		for (int catch_at = 0; catch_at <= depth; catch_at++) {
			std::string trail;

			try {
				int r = ops::stage1(depth, catch_at, &trail);
				out += trail + "=" + std::to_string(r) + " ";
			} catch (const ops::Failure &e) {
				out += "driver(" + std::string(e.what()) + ") ";
			}
		}
	out += "rethrow=" + std::to_string(ops::rethrow_outer()) + " ";
	try {
		ops::nested_inner();
	} catch (const std::exception &e) {
		out += "nested=" + ops::unwrap(e) + " ";
	}
	/* a pool of two threads, their exceptions rethrown here */
	std::vector<std::future<int>> jobs;
	for (int d = 1; d <= 4; d++)
		jobs.push_back(std::async(std::launch::async, ops::job, d));
	for (auto &j : jobs) {
		try {
			out += std::to_string(j.get());
		} catch (const ops::Failure &e) {
			std::exception_ptr p = std::current_exception();

			try {
				std::rethrow_exception(p);
			} catch (const ops::Failure &again) {
				out += "pool(" + std::to_string(again.depth) + ")";
			}
		}
	}
	out += " backtrace=" + ops::inspect();
	out += " " + altstack_round();
	return out;
}

static long cpu_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* The benchmark modes: CPU ns per call of ops::leaf, or per throw through depth frames. */
static int bench(long calls, long depth, long throws_n)
{
	long t0 = cpu_ns(), x = 1, n = calls ? calls : throws_n;

	for (long i = 0; i < calls; i++)
		x = ops::leaf(x);
	for (long i = 0; i < throws_n; i++) {
		std::string t;

		try {
			ops::stage1((int)depth, 0, &t);
		} catch (const ops::Failure &) {
			x++;
		}
	}
	printf("bench ns_per_op %.1f (%ld)\n", (double)(cpu_ns() - t0) / (n ? n : 1), x & 1);
	return 0;
}

static long number(const char *s)
{
	char *end;
	long v = s ? strtol(s, &end, 10) : -1;

	if (!s || end == s || *end || v < 0) {
		fprintf(stderr, "cxx_throw: bad number '%s'; usage: cxx_throw [--wait-signal] "
				"[--rounds N] [--log FILE] | --bench-calls N | --bench-throws DEPTH,N\n", s ? s : "");
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long rounds = 20, done = 0, bench_calls = 0, bench_depth = 0, bench_throws = 0;
	bool wait_signal = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait-signal"))
			wait_signal = true;
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = number(argv[++i]);
		else if (!strcmp(argv[i], "--log") && i + 1 < argc)
			log_file = fopen(argv[++i], "w");
		else if (!strcmp(argv[i], "--bench-calls") && i + 1 < argc)
			bench_calls = number(argv[++i]);
		else if (!strcmp(argv[i], "--bench-throws") && i + 1 < argc &&
			 sscanf(argv[++i], "%ld,%ld", &bench_depth, &bench_throws) == 2)
			;
		else
			number(nullptr);
	}
	Dl_info self;
	if (dladdr((void *)ops::where, &self))
		ops::main_base = self.dli_fbase;
	struct sigaction sa = {};
	sa.sa_handler = on_usr2;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &sa, nullptr);
	if (ready_then_wait(wait_signal, on_stop))
		stop = 1;

	if (bench_calls || bench_throws)
		return bench(bench_calls, bench_depth, bench_throws);
	while (!stop && (!rounds || done < rounds)) {
		printf("round %ld: %s\n", done, round_of_throws().c_str());
		done++;
	}
	fflush(stdout);
	if (log_file)
		fclose(log_file);
	fprintf(stderr, "cxx_throw: %ld rounds, %ld throws\n", done, throws.load());
	return 0;
}
