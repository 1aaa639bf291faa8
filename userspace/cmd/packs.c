// SPDX-License-Identifier: MIT
/* `tracer packs [-p PID]`: the probe packs, what each is for, and which a process gets. */
#include "cmd/commands.h"
#include "cmd/pid_options.h"
#include "probe/packs.h"
#include "util/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char packs_usage[] =
	"Usage: tracer packs [-p PID]\n"
	"\n"
	"Lists the probe packs of the packs folder: name, number of probes, when tracer uses one\n"
	"by default (no -u/-P), and its description. With -p, marks with '*' the packs used by\n"
	"default for that process.\n"
	"\n"
	"  -p, --pid PID   the process to check the packs against\n"
	"  -h, --help      this text\n";

#define COLS 100

/* Prints text from column indent on, wrapped at spaces within COLS columns. */
static void print_wrapped(const char *text, int indent)
{
	int width = COLS - indent;

	while (*text) {
		int len = strlen(text), cut = len;

		if (len > width) {
			for (cut = width; cut > 0 && text[cut] != ' '; cut--)
				;
			if (!cut) /* one word longer than the line */
				for (cut = width; text[cut] && text[cut] != ' '; cut++)
					;
		}
		printf("%*s%.*s\n", indent, "", cut, text);
		text += cut;
		while (*text == ' ')
			text++;
	}
}

/* One pack: its name, probes, when it is used, its description; what comes from the pack
 * file under the text rule (util/util.h). */
static void print_pack(const struct probe_pack *p, size_t nprobes, int namew, bool used)
{
	char when[512], safe[3 * sizeof(when)], *name = text_safe_dup(p->name);
	int n = 0;

	if (!p->when_cnt)
		snprintf(when, sizeof(when), "only with -P %s", p->name);
	for (size_t w = 0; w < p->when_cnt && n < (int)sizeof(when); w++)
		n += snprintf(when + n, sizeof(when) - n, "%s%s", w ? ", " : "used when it maps ",
			      p->when_maps[w]);
	printf("%c %-*s  %zu probe%s; %s\n", used ? '*' : ' ', namew, name, nprobes,
	       plural_s(nprobes), printable(when, safe, sizeof(safe)));
	free(name);
	if (p->description) {
		char *text = text_safe_dup(p->description);

		print_wrapped(text, namew + 4);
		free(text);
	}
}

int cmd_packs(int argc, char **argv)
{
	struct target t = { .pidfd = -1 };
	struct pack_set set = { 0 };
	char err[512], comm[4 * sizeof(t.comm)];
	int namew = 4, pid = 0, ret;

	ret = pid_options__parse(argc, argv, "packs", packs_usage, &pid);
	if (ret >= 0)
		return ret;
	ret = 1;
	if (optind < argc)
		return usage_error("packs", "unexpected argument '%s'", argv[optind]);
	if (pid && target__open(pid, &t, err, sizeof(err))) {
		pr_err("%s", err);
		return 1;
	}
	if (pack_set__load(&set, err, sizeof(err))) {
		pr_err("%s", err);
		goto out;
	}
	if (!set.cnt) {
		pr_err("no probe packs in %s (set TRACER_PROBES to the packs folder)",
		       probe_pack__dir());
		goto out;
	}
	for (size_t i = 0; i < set.cnt; i++)
		if ((int)strlen(set.packs[i].name) > namew)
			namew = strlen(set.packs[i].name);
	printf("packs in %s", probe_pack__dir());
	if (pid)
		printf(" (* = used for pid %d (%s) when no -u/-P is given)", pid,
		       printable(t.comm, comm, sizeof(comm)));
	printf("\n");
	for (size_t i = 0; i < set.cnt; i++)
		print_pack(&set.packs[i], set.specs[i].cnt, namew,
			   pid && probe_pack__applies(&set.packs[i], t.objs, t.nobjs));
	ret = 0;
out:
	pack_set__free(&set);
	target__close(&t);
	return ret;
}
