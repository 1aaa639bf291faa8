// SPDX-License-Identifier: MIT
/* A C++ target: operator classes in namespaces whose virtual Compute methods a graph runs in a
 * loop, like an inference runtime's kernels. Its symbols are mangled
 * (_ZN4onnx4Conv7ComputeERNS_7ContextE); tests check that tracer shows and matches them as
 * onnx::Conv::Compute(onnx::Context&).
 *
 * Usage: cxx_ops [--wait-signal] [--iterations N] [--us N]
 * Prints "ready PID" on stdout; with --wait-signal, waits for SIGUSR1 first. Then runs N
 * iterations (default 100; 0: until SIGINT or SIGTERM) of the graph Conv -> Relu -> MatMul ->
 * Softmax, each Compute spinning N µs (default 100), and prints
 * "cxx_ops: I iterations, C Compute calls" on stderr. Build with frame pointers and without
 * -fcf-protection so that every Compute starts with `push %rbp`. */
#include "ready.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#define PROBED __attribute__((noinline, used))

static volatile sig_atomic_t stop;

namespace onnx {

struct Context {
	long calls = 0;
	long spin_ns = 100000;
	double acc = 0;
};

static long now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Busy work, never a sleep: a span lasts at least spin_ns. */
static void spin(Context &ctx, double k)
{
	long end = now_ns() + ctx.spin_ns;

	while (now_ns() < end)
		ctx.acc += k;
}

class OpKernel {
public:
	virtual ~OpKernel() = default;
	virtual int Compute(Context &ctx) = 0;
	virtual const char *Name() const = 0;
};

class Conv : public OpKernel {
public:
	PROBED int Compute(Context &ctx) override
	{
		spin(ctx, 1.0);
		return ++ctx.calls;
	}
	const char *Name() const override { return "Conv"; }
};

class Relu : public OpKernel {
public:
	PROBED int Compute(Context &ctx) override
	{
		spin(ctx, 2.0);
		return ++ctx.calls;
	}
	const char *Name() const override { return "Relu"; }
};

namespace math {

class MatMul : public OpKernel {
public:
	PROBED int Compute(Context &ctx) override
	{
		spin(ctx, 3.0);
		return ++ctx.calls;
	}
	const char *Name() const override { return "MatMul"; }
};

/* A template: its demangled name carries a return type before it. */
template <typename T> PROBED T Softmax(Context &ctx, T scale)
{
	spin(ctx, 4.0);
	ctx.calls++;
	return scale * 2;
}

} // namespace math

class SoftmaxKernel : public OpKernel {
public:
	PROBED int Compute(Context &ctx) override { return (int)math::Softmax<double>(ctx, 0.5); }
	const char *Name() const override { return "Softmax"; }
};

class Graph {
public:
	Graph()
	{
		ops.emplace_back(new Conv);
		ops.emplace_back(new Relu);
		ops.emplace_back(new math::MatMul);
		ops.emplace_back(new SoftmaxKernel);
	}
	/* Through the base class, so that each call is a virtual one. */
	PROBED void Run(Context &ctx)
	{
		for (auto &op : ops)
			op->Compute(ctx);
	}

private:
	std::vector<std::unique_ptr<OpKernel>> ops;
};

} // namespace onnx

static void on_signal(int) { stop = 1; }

static void usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "cxx_ops: %s '%s'; usage: cxx_ops [--wait-signal] [--iterations N] "
			"[--us N]\n", what, arg);
	exit(2);
}

static long number(const char *s, const char *opt)
{
	char *end;
	long v;

	if (!s)
		usage_error("option needs a value", opt);
	v = strtol(s, &end, 10);
	if (end == s || *end || v < 0 || v > 100000000)
		usage_error("bad number", s);
	return v;
}

int main(int argc, char **argv)
{
	long iterations = 100, done = 0;
	bool wait_signal = false;
	onnx::Context ctx;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait-signal"))
			wait_signal = true;
		else if (!strcmp(argv[i], "--iterations"))
			iterations = number(argv[++i], "--iterations");
		else if (!strcmp(argv[i], "--us"))
			ctx.spin_ns = number(argv[++i], "--us") * 1000;
		else
			usage_error("unknown argument", argv[i]);
	}
	if (ready_then_wait(wait_signal, on_signal))
		stop = 1;

	onnx::Graph graph;

	while (!stop && (!iterations || done < iterations)) {
		graph.Run(ctx);
		done++;
	}
	fprintf(stderr, "cxx_ops: %ld iterations, %ld Compute calls\n", done, ctx.calls);
	return 0;
}
