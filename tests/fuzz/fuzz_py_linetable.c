// SPDX-License-Identifier: MIT
/* Fuzzes CPython's line-table readers (the 3.11 location table, 3.8's co_lnotab, 3.10's
 * co_linetable) with hostile tables: the first 4 bytes of the input are the code unit asked
 * for, the rest the table. They must not read outside the table, and answer -1 (unknown) or a
 * line that is not negative. */
#include "python/py_code.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t unit;
	uint8_t *tab;
	int line;

	if (size < 4)
		return 0;
	memcpy(&unit, data, 4);
	/* a copy of exactly the table's size, so that ASan sees any read past it */
	tab = malloc(size - 4 ? size - 4 : 1);
	memcpy(tab, data + 4, size - 4);
	line = py_linetable__line(tab, size - 4, 1000, unit % 4096);
	fuzz_check(line >= -1, "line %d: a line is -1 (unknown) or not negative", line);
	line = py_lnotab__line(tab, size - 4, 1000, unit % 8192);
	fuzz_check(line >= -1, "lnotab line %d: -1 (unknown) or not negative", line);
	line = py_linetable310__line(tab, size - 4, 1000, unit % 8192);
	fuzz_check(line >= -1, "3.10 line %d: -1 (unknown) or not negative", line);
	free(tab);
	return 0;
}
