// SPDX-License-Identifier: MIT
#include "cmd/unknown_option.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

int unknown_option(const char *cmd, const char *arg, const struct option *longopts)
{
	struct near_names nr;
	char name[128], near[512] = "";
	size_t n = 0;

	if (!strncmp(arg, "--", 2) && arg[2]) { /* --name or --name=value */
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
		near_names__init(&nr, name);
		for (const struct option *o = longopts; o->name; o++)
			near_names__offer(&nr, o->name);
		for (int i = 0; i < 3 && nr.name[i] && n < sizeof(near); i++)
			n += snprintf(near + n, sizeof(near) - n, "%s--%s",
				      i ? ", " : "; did you mean: ", nr.name[i]);
		near_names__free(&nr);
	}
	return usage_error(cmd, "unknown option '%s'%s", arg, near);
}
