// SPDX-License-Identifier: MIT
/* C++ functions whose `ret` is single-stepped but the instruction before their epilogue is not
 * (elf/site.h: exits moved back): built as Debian builds its packages (-O2, the stack
 * protector, no frame pointers), and two written in assembly for the shapes a compiler does
 * not promise:
 *   onnx::Epilogues::Skip(long us)  returns at once when us is 0, through a jne that falls
 *                                   through to that `ret`; spins us µs otherwise, and returns
 *                                   through a second `ret` (the jne taken);
 *   onnx::Epilogues::Frame(long us) spins, then a never-taken js to abort@plt, then
 *                                   lea -8(%rbp),%rsp; pop; pop; ret (rsp found from rbp).
 * onnx::Resize::Compute(onnx::Tensor&) is compiled C++ with a buffer on its stack: the stack
 * protector's check (sub %fs:0x28; jne __stack_chk_fail) comes before its epilogue.
 *
 * Usage: cxx_epilogues [--wait-signal] [--iterations N] [--us N] [--bench-calls N]
 * Prints "ready PID"; with --wait-signal, waits for SIGUSR1. Each iteration calls Skip(0),
 * Skip(us), Frame(us) and Resize::Compute (spinning us µs), default 200 iterations of 200 µs
 * (0 iterations: until SIGINT or SIGTERM), then prints on stderr
 * "cxx_epilogues: I iterations, Q quick, L long, F frame, R resize".
 * --bench-calls N (make bench): N calls of Resize::Compute that do not spin, then
 * "bench ns_per_op X" on stdout, the process's CPU ns per call. */
#include "ready.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <unistd.h>

static volatile sig_atomic_t stop;
static long quick, slow, frames, resizes;

static long now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

extern "C" __attribute__((noinline, used)) void epilogue_spin_us(long us)
{
	long end = now_ns() + us * 1000;

	while (now_ns() < end)
		;
}

namespace onnx {
namespace Epilogues {
long Skip(long us);
long Frame(long us);
} // namespace Epilogues

struct Tensor {
	long us;
	unsigned char data[64];
};

class Resize {
public:
	__attribute__((noinline, used)) long Compute(Tensor &t);
};

/* A buffer on the stack: the stack protector checks its canary before the epilogue. */
long Resize::Compute(Tensor &t)
{
	char row[128];

	snprintf(row, sizeof(row), "%ld", t.us);
	epilogue_spin_us(t.us);
	memcpy(t.data, row, 16);
	return (long)strlen(row);
}
} // namespace onnx

/* The two shapes, with their unwind tables (an exception may pass through them). */
asm(R"(
	.text
	.globl _ZN4onnx9Epilogues4SkipEl
	.type _ZN4onnx9Epilogues4SkipEl, @function
_ZN4onnx9Epilogues4SkipEl:
	.cfi_startproc
	push %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	sub $16, %rsp
	.cfi_def_cfa_offset 32
	mov %rdi, %rbx
	test %rbx, %rbx
	jne 1f
	add $16, %rsp
	.cfi_remember_state
	.cfi_def_cfa_offset 16
	pop %rbx
	.cfi_def_cfa_offset 8
	xor %eax, %eax
	ret
1:
	.cfi_restore_state
	mov %rbx, %rdi
	call epilogue_spin_us
	add $16, %rsp
	.cfi_def_cfa_offset 16
	pop %rbx
	.cfi_def_cfa_offset 8
	mov $1, %eax
	ret
	.cfi_endproc
	.size _ZN4onnx9Epilogues4SkipEl, .-_ZN4onnx9Epilogues4SkipEl

	.globl _ZN4onnx9Epilogues5FrameEl
	.type _ZN4onnx9Epilogues5FrameEl, @function
_ZN4onnx9Epilogues5FrameEl:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	push %rbx
	.cfi_offset %rbx, -24
	sub $24, %rsp
	mov %rdi, %rbx
	call epilogue_spin_us
	test %rbx, %rbx
	js 2f
	.cfi_remember_state
	lea -8(%rbp), %rsp
	pop %rbx
	pop %rbp
	.cfi_def_cfa %rsp, 8
	mov $2, %eax
	ret
2:
	.cfi_restore_state
	call abort@PLT
	.cfi_endproc
	.size _ZN4onnx9Epilogues5FrameEl, .-_ZN4onnx9Epilogues5FrameEl
)");

static void on_signal(int) { stop = 1; }

static long cpu_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* n calls of a C++ function built with the stack protector, its spin 0 */
static int bench(long n)
{
	onnx::Tensor t = {};
	onnx::Resize resize;
	long start = cpu_ns(), sum = 0;

	for (long i = 0; i < n; i++)
		sum += resize.Compute(t);
	printf("bench ns_per_op %.1f (%ld)\n", (double)(cpu_ns() - start) / (n ? n : 1), sum);
	return 0;
}

static long number(const char *s)
{
	char *end;
	long v = s ? strtol(s, &end, 10) : -1;

	if (!s || end == s || *end || v < 0 || v > 100000000) {
		fprintf(stderr, "cxx_epilogues: bad number '%s'; usage: cxx_epilogues "
				"[--wait-signal] [--iterations N] [--us N] [--bench-calls N]\n",
			s ? s : "");
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long iterations = 200, us = 200, done = 0;
	bool wait_signal = false;
	onnx::Tensor t = {};
	onnx::Resize resize;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait-signal"))
			wait_signal = true;
		else if (!strcmp(argv[i], "--iterations"))
			iterations = number(argv[++i]);
		else if (!strcmp(argv[i], "--us"))
			us = number(argv[++i]);
		else if (!strcmp(argv[i], "--bench-calls"))
			return bench(number(argv[++i]));
		else
			number(NULL);
	}
	if (ready_then_wait(wait_signal, on_signal))
		stop = 1;

	t.us = us;
	/* C++ with exceptions (its object uses __gxx_personality_v0): tracer probes the exits */
	try {
		while (!stop && (!iterations || done < iterations)) {
			quick += onnx::Epilogues::Skip(0) == 0;
			slow += onnx::Epilogues::Skip(us) == 1;
			frames += onnx::Epilogues::Frame(us) == 2;
			if (resize.Compute(t) <= 0)
				throw std::runtime_error("resize failed");
			resizes++;
			done++;
		}
	} catch (const std::exception &e) {
		fprintf(stderr, "cxx_epilogues: %s\n", e.what());
		return 1;
	}
	fprintf(stderr, "cxx_epilogues: %ld iterations, %ld quick, %ld long, %ld frame, %ld resize\n",
		done, quick, slow, frames, resizes);
	return 0;
}
