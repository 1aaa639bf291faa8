// SPDX-License-Identifier: MIT
/* Ground truth for "name_from" with pointer chains (argN->Type.field->...:str): handle() gets a
 * pointer from which a chain of three pointers leads to a name, as gst_pad_push's pad leads to
 * its peer, the peer's element and the element's name. Every 8-byte slot of each block holds the
 * next pointer, so the chain reads the same whatever the fields' offsets (below 4 KiB). Calls
 * alternate between a good chain, a NULL pointer and a chain that ends in unmapped memory: the
 * good ones must be named, the others unnamed, and the program must never fault.
 *
 *   named_objects N    makes 3*N calls, then prints "calls 3N named N"
 *
 * With "relink", halfway the good chain's last block points at another name ("element8"), as
 * a pad relinked to another element: the calls go on at once, and it prints the time of the
 * change (CLOCK_MONOTONIC, tracer's clock) on a second line, "relinked NS".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define SLOTS 512

static void *block_pointing_to(const void *next)
{
	void **b = malloc(SLOTS * sizeof(void *));

	for (int i = 0; i < SLOTS; i++)
		b[i] = (void *)next;
	return b;
}

__attribute__((noinline, noipa, used)) int handle(void *pad)
{
	__asm__ volatile("" ::: "memory");
	return pad != NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	int relink = argc > 2 && !strcmp(argv[2], "relink");
	/* on the heap, as an element's name is: BPF cannot fault in a page not yet touched */
	char *name = strdup("element7"), *other = strdup("element8");
	struct timespec relinked = { 0 };
	void **last;
	/* an address that is certainly unmapped: a page mapped, then unmapped */
	void *gone = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *good = block_pointing_to(block_pointing_to(last = block_pointing_to(name)));
	void *bad = block_pointing_to(block_pointing_to(gone));
	long named = 0, calls = 0;

	munmap(gone, 4096);
	for (long i = 0; i < n; i++) {
		if (relink && i == n / 2) {
			for (int j = 0; j < SLOTS; j++)
				__atomic_store_n(&last[j], other, __ATOMIC_RELEASE);
			clock_gettime(CLOCK_MONOTONIC, &relinked);
		}
		named += handle(good);
		handle(NULL);
		handle(bad);
		calls += 3;
	}
	printf("calls %ld named %ld\n", calls, named);
	if (relink)
		printf("relinked %lld\n", relinked.tv_sec * 1000000000LL + relinked.tv_nsec);
	return 0;
}
