// SPDX-License-Identifier: MIT
/* Fuzzes the CPython 3.11 location-table reader (py_linetable__line) with hostile tables: the
 * first 4 bytes of the input are the code unit asked for, the rest the table. It must not read
 * outside the table, and answers -1 (unknown) or a line that is not negative. */
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
	free(tab);
	return 0;
}
