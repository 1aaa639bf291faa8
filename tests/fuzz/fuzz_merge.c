// SPDX-License-Identifier: MIT
/* Fuzzes merge (userspace/trace/merge.c), which often runs as root on files from anywhere: the
 * input is up to four traces separated by a line "=====" (one alone is merged with itself),
 * each handed over as a file (a memfd opened by path), merged into a file of a private folder.
 * Checks what merge promises besides not crashing: a merge that succeeds writes one valid JSON
 * document (a strict reader's JSON) holding at least every event the inputs' readers hand out;
 * one that fails leaves nothing behind, neither the output nor a temporary file. */
#include "fuzz.h"
#include "trace/json_text.h"
#include "trace/json_value.h"
#include "trace/merge.h"
#include "trace/trace_reader.h"
#include "util/util.h"

#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_INPUTS 4
#define SEPARATOR "\n=====\n"

static int memfds[MAX_INPUTS];
static char paths[MAX_INPUTS][64], dir[] = "/tmp/fuzz-merge-XXXXXX", out[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	for (int i = 0; i < MAX_INPUTS; i++) {
		memfds[i] = memfd_create("fuzz-merge", MFD_CLOEXEC);
		if (memfds[i] < 0) {
			perror("memfd_create");
			exit(1);
		}
		snprintf(paths[i], sizeof(paths[i]), "/proc/self/fd/%d", memfds[i]);
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(out, sizeof(out), "%s/out.json", dir);
	verbosity = VERB_QUIET;
	return 0;
}

static void put(int fd, const uint8_t *p, size_t n)
{
	if (ftruncate(fd, 0) || pwrite(fd, p, n, 0) != (ssize_t)n)
		fuzz_fail("cannot fill the memfd");
}

/* The events a reader hands out for path whose text, made valid as merge makes it (raw
 * control bytes escaped, invalid UTF-8 replaced), is JSON (0 when it cannot be read). */
static uint64_t count_events(const char *path)
{
	struct trace_reader *r;
	struct trace_item it;
	uint64_t n = 0;

	if (trace_reader__open(&r, path, TR_EVENTS, NULL, 0))
		return 0;
	while (trace_reader__next(r, &it) > 0) {
		char *clean = malloc(6 * it.ev.len + 1);

		n += json_valid(clean, json_clean(clean, it.ev.text, it.ev.len));
		free(clean);
	}
	trace_reader__close(r);
	return n;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0;

	fuzz_check(f, "merge succeeded but %s is missing", path);
	*len = 0;
	for (;;) {
		buf = realloc(buf, cap += 1 << 16);
		size_t got = fread(buf + *len, 1, cap - *len, f);

		*len += got;
		if (got == 0)
			break;
	}
	fclose(f);
	return buf;
}

/* Nothing in the folder: a failed merge left no output and no temporary file. */
static void check_empty(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		fuzz_check(de->d_name[0] == '.', "a failed merge left %s behind", de->d_name);
	if (d)
		closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[MAX_INPUTS + 1];
	const uint8_t *p = data, *end = data + size;
	uint64_t want = 0;
	size_t n = 0, len;
	char *text;

	while (n < MAX_INPUTS) {
		const uint8_t *sep = memmem(p, end - p, SEPARATOR, strlen(SEPARATOR));
		const uint8_t *stop = sep && n + 1 < MAX_INPUTS ? sep : end;

		put(memfds[n], p, stop - p);
		argv[n] = paths[n];
		want += count_events(paths[n++]);
		if (stop == end)
			break;
		p = stop + strlen(SEPARATOR);
	}
	if (n == 1) {
		argv[n++] = paths[0];
		want *= 2;
	}
	if (trace_merge(argv, n, out)) {
		check_empty();
		return 0;
	}
	text = read_file(out, &len);
	fuzz_check(json_valid(text, len), "the merged file is not valid JSON");
	free(text);
	fuzz_check(count_events(out) >= want, "the merge lost events (%llu of %llu)",
		   (unsigned long long)count_events(out), (unsigned long long)want);
	unlink(out);
	check_empty();
	return 0;
}
