// SPDX-License-Identifier: MIT
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "probe/struct_fields.h"
#include "struct_fields_table.h"

long struct_field__offset(const char *name, size_t len)
{
	for (const struct struct_field *f = struct_fields; f->name; f++)
		if (strlen(f->name) == len && !strncmp(f->name, name, len))
			return (long)f->offset;
	return -1;
}

const char *struct_field__known(void)
{
	static char buf[512];
	size_t n = 0;

	if (buf[0])
		return buf;
	for (const struct struct_field *f = struct_fields; f->name && n + 2 < sizeof(buf); f++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? ", " : "", f->name);
	if (!n)
		snprintf(buf, sizeof(buf), "none (tracer was built without the -dev headers)");
	return buf;
}
