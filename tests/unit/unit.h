/* SPDX-License-Identifier: MIT */
/* A minimal unit-test harness: each check that fails prints file:line; each test prints
 * "ok NAME" or "not ok NAME", which tests/run.py counts. */
#ifndef TRACER_UNIT_H
#define TRACER_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_failed_checks;
static int unit_tests_failed;

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                               \
			unit_failed_checks++;                                         \
		}                                                                     \
	} while (0)

#define CHECK_STR(a, b)                                                                    \
	do {                                                                               \
		const char *_a = (a), *_b = (b);                                           \
		if (!_a || !_b || strcmp(_a, _b)) {                                        \
			fprintf(stderr, "  %s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__, \
				_a ? _a : "(null)", _b ? _b : "(null)");                   \
			unit_failed_checks++;                                              \
		}                                                                          \
	} while (0)

#define RUN(test)                                                         \
	do {                                                              \
		int _before = unit_failed_checks;                         \
		test();                                                   \
		if (unit_failed_checks == _before) {                      \
			printf("ok %s\n", #test);                         \
		} else {                                                  \
			printf("not ok %s\n", #test);                     \
			unit_tests_failed++;                              \
		}                                                         \
		fflush(stdout);                                           \
	} while (0)

#define UNIT_EXIT() return unit_tests_failed ? 1 : 0

#endif
