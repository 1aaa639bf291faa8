// SPDX-License-Identifier: MIT
/* `tracer list -p PID [PATTERN]`, `tracer list BINARY [PATTERN]`: options, usage, then the
 * catalogue of probe/list. */
#include "cmd/commands.h"
#include "cmd/pid_options.h"
#include "probe/list.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char list_usage[] =
	"Usage: tracer list -p PID [PATTERN]\n"
	"       tracer list BINARY [PATTERN]\n"
	"\n"
	"Lists the functions tracer can probe in each ELF object a process maps (or in one file),\n"
	"with the cost of an entry probe on each and the packs that would probe it. PATTERN is a\n"
	"glob over function names; C++ names match demangled too, with or without parameters.\n"
	"USDT probes (<sys/sdt.h>) are listed after the functions; PATTERN usdt:PROVIDER:NAME\n"
	"(globs) lists only them.\n"
	"\n"
	"  -p, --pid PID   the objects process PID maps (reading them needs root)\n"
	"  -h, --help      this text\n"
	"\n"
	"The cost per hit depends on the function's first instruction: the kernel emulates a few\n"
	"(push, nop, jumps: about 0.7us), turns a 5-byte nop into a call (about 0.5us), and runs\n"
	"anything else out of line with a second trap (about 10us). A return probe adds 0.5us.\n"
	"\n"
	"Examples:\n"
	"  sudo tracer list -p $(pidof ffmpeg) 'avcodec_*'\n"
	"  tracer list ./inference 'onnx::*::Compute'\n"
	"  tracer list /usr/bin/python3.11 'usdt:python:gc*'\n";

/* A file named on the command line, as the one object to list. */
static int object_from_file(const char *arg, struct mapped_object *o)
{
	char path[PATH_MAX];
	struct stat st;
	const char *slash;

	/* a bare name that is not in the current folder: look it up like a shell */
	if (!strchr(arg, '/') && stat(arg, &st)) {
		const char *env = getenv("PATH");
		char *dirs = xstrdup(env ? env : "/usr/bin:/bin"), *save = NULL;
		bool found = false;

		for (char *d = strtok_r(dirs, ":", &save); d && !found;
		     d = strtok_r(NULL, ":", &save)) {
			snprintf(path, sizeof(path), "%s/%s", *d ? d : ".", arg);
			found = !access(path, X_OK) && !stat(path, &st) && S_ISREG(st.st_mode);
		}
		free(dirs);
		if (!found)
			return -ENOENT;
	} else {
		snprintf(path, sizeof(path), "%s", arg);
	}
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	slash = strrchr(path, '/');
	o->path = xstrdup(path);
	o->open_path = xstrdup(path);
	o->base = xstrdup(slash ? slash + 1 : path);
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	return 0;
}

int cmd_list(int argc, char **argv)
{
	struct mapped_object file = { 0 }, *objs;
	struct target t = { .pidfd = -1 };
	const char *pattern = NULL;
	char err[512], where[64 + sizeof(t.comm)];
	size_t nobjs;
	int pid = 0, ret;

	ret = pid_options__parse(argc, argv, "list", list_usage, &pid);
	if (ret >= 0)
		return ret;
	if (!pid && optind >= argc)
		return usage_error("list", "nothing to list: give -p PID or a BINARY");
	if (argc - optind > (pid ? 1 : 2))
		return usage_error("list", "unexpected argument '%s'", argv[argc - 1]);

	if (pid) {
		if (target__open(pid, &t, err, sizeof(err))) {
			pr_err("%s", err);
			return 1;
		}
		if (!t.nobjs) {
			pr_err("cannot read the files pid %d maps (%s)%s", pid, t.comm,
			       geteuid() ? ": run as root" : "");
			target__close(&t);
			return 1;
		}
		objs = t.objs;
		nobjs = t.nobjs;
		snprintf(where, sizeof(where), "pid %d (%s)", pid, t.comm);
	} else {
		ret = object_from_file(argv[optind], &file);
		if (ret) {
			if (ret == -EINVAL)
				pr_err("%s is not a regular file: give an executable or a shared "
				       "library", argv[optind]);
			else
				pr_err("no such file: %s (give a path to an executable or a shared "
				       "library)", argv[optind]);
			return 1;
		}
		optind++;
		objs = &file;
		nobjs = 1;
		snprintf(where, sizeof(where), "%s", file.path);
	}
	if (optind < argc)
		pattern = argv[optind];

	ret = list__print(objs, nobjs, pid ? NULL : file.path, where, pattern) ? 1 : 0;
	target__close(&t);
	free(file.path);
	free(file.base);
	free(file.open_path);
	return ret;
}
