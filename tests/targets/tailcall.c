// SPDX-License-Identifier: MIT
/* Tail calls between probed functions, as av_freep -> av_free: outer() ends with `jmp inner`
 * (built with -O2), so one `ret` ends both. Calls outer() N times, 1 ms apart.
 *   tailcall N */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) int inner(int x)
{
	volatile int y = x;

	for (int i = 0; i < 1000; i++)
		y += i;
	return y;
}

/* the call is the last thing it does: a sibling call, compiled to a jump */
__attribute__((noinline)) int outer(int x)
{
	return inner(x + 1);
}

int main(int argc, char **argv)
{
	struct timespec ms = { 0, 1000 * 1000 };
	int n = argc > 1 ? atoi(argv[1]) : 100;
	long sum = 0;

	for (int i = 0; i < n; i++) {
		sum += outer(i);
		nanosleep(&ms, NULL);
	}
	printf("tailcall: %d calls, %ld\n", n, sum);
	return 0;
}
