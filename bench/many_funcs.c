// SPDX-License-Identifier: MIT
/* Row 4c's target (bench/detach.py): 1,000 functions, fn000 to fn999, each called once every
 * millisecond until killed, so that attaching and detaching a probe on each is measured on a
 * process that runs through them. */
#include <time.h>

#define F(n)                                                                                   \
	__attribute__((noinline)) void fn##n(void)                                             \
	{                                                                                      \
		__asm__ volatile("");                                                          \
	}
#define F10(p) F(p##0) F(p##1) F(p##2) F(p##3) F(p##4) F(p##5) F(p##6) F(p##7) F(p##8) F(p##9)
#define F100(p)                                                                                \
	F10(p##0) F10(p##1) F10(p##2) F10(p##3) F10(p##4) F10(p##5) F10(p##6) F10(p##7)        \
	F10(p##8) F10(p##9)
#define C(n) fn##n();
#define C10(p) C(p##0) C(p##1) C(p##2) C(p##3) C(p##4) C(p##5) C(p##6) C(p##7) C(p##8) C(p##9)
#define C100(p)                                                                                \
	C10(p##0) C10(p##1) C10(p##2) C10(p##3) C10(p##4) C10(p##5) C10(p##6) C10(p##7)        \
	C10(p##8) C10(p##9)

F100(0) F100(1) F100(2) F100(3) F100(4) F100(5) F100(6) F100(7) F100(8) F100(9)

int main(void)
{
	const struct timespec ms = { 0, 1000000 };

	for (;;) {
		C100(0) C100(1) C100(2) C100(3) C100(4) C100(5) C100(6) C100(7) C100(8) C100(9)
		nanosleep(&ms, NULL);
	}
}
