/* SPDX-License-Identifier: MIT */
/* Shared by the libFuzzer harnesses: a property the code promises and the input broke is a
 * finding like a crash. fuzz_fail() prints what was expected and aborts, so libFuzzer saves the
 * input as a crash artifact. */
#ifndef TRACER_FUZZ_H
#define TRACER_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

#define fuzz_fail(...)                                                       \
	do {                                                                 \
		fprintf(stderr, "%s:%d: property broken: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                                \
		fputc('\n', stderr);                                         \
		abort();                                                     \
	} while (0)

#define fuzz_check(cond, ...)              \
	do {                               \
		if (!(cond))               \
			fuzz_fail(__VA_ARGS__); \
	} while (0)

#endif
