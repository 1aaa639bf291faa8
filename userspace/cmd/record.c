// SPDX-License-Identifier: MIT
/* tracer record: options and usage of a recording; the recording itself is record/record.c. */
#include "analyze/report.h"
#include "cmd/commands.h"
#include "cmd/unknown_option.h"
#include "record/budget.h"
#include "record/record.h"
#include "python/py_session.h"
#include "store/clickhouse.h"
#include "store/push.h"
#include "util/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"Usage: tracer [record] -p PID[,PID...] [options]\n"
	"       tracer [record] [options] -- COMMAND [ARGS...]\n"
	"\n"
	"Attach to a running pipeline and record its function spans and scheduler states into a\n"
	"Chrome Trace Event JSON file (open it in ui.perfetto.dev or chrome://tracing).\n"
	"\n"
	"Target:\n"
	"  -p, --pid PID[,PID...]   processes to trace\n"
	"  -- COMMAND [ARGS...]     start COMMAND (as the invoking user under sudo), attach before\n"
	"                           its code runs, record until it exits, exit with its status\n"
	"  -a, --all-processes      every process that maps a probed object, now or later\n"
	"      --no-follow          only the targets: not their children (existing and new) and\n"
	"                           the programs they exec, which are traced by default (a\n"
	"                           forked one from a few ms after its fork)\n"
	"      --follow             children from their first instruction, with probes shared\n"
	"                           by every process mapping the probed objects: the others\n"
	"                           on the machine trap on the probed functions too\n"
	"\n"
	"Probes (default: every pack in the packs folder whose \"when\" matches the target):\n"
	"  -u, --uprobe SPEC        CATEGORY:OBJECT:FUNCTION; OBJECT and FUNCTION are globs over\n"
	"                           mapped file basenames and symbol names; CATEGORY is decode,\n"
	"                           encode, operator, queue, io or other; FUNCTION\n"
	"                           usdt:PROVIDER:NAME[..END] is a USDT probe (an instant, or a\n"
	"                           span from NAME to END)\n"
	"  -P, --pack PACK          a probe pack: a name from the packs folder, or a path\n"
	"\n"
	"Recording:\n"
	"  -d, --duration DUR       stop after DUR (seconds, or with a unit: 500ms, 2m)\n"
	"  -o, --output FILE        output file (default tracer-COMM-PID-TIME.json); .gz compresses;\n"
	"                           - is standard output; a previous FILE is kept as FILE.old\n"
	"      --to URL             rows to ClickHouse while recording, the whole file at the end\n"
	"                           (tracer push; clickhouse://[USER@]HOST[:PORT]/DB); if that\n"
	"                           fails the file stays, for tracer push later\n"
	"      --min-dur DUR        keep only spans at least this long (microseconds, or 50us,\n"
	"                           2ms); shorter calls are counted, not recorded\n"
	"      --no-sched           do not record scheduler states\n"
	"      --entry-only         no return probes: each call is an instant (safe for Go, C++\n"
	"                           exceptions and coroutines, which return probes can crash)\n"
	"      --no-args            read none of the target's data: no captured arguments, span\n"
	"                           names from strings, queue depths or Python frames (one stack\n"
	"                           word is still read to tell a tail call: see tracer(1))\n"
	"      --no-python          no Python function spans (on by default for CPython targets)\n"
	"      --no-pack NAME[,...] leave these packs out of the automatic choice (all: every one)\n"
	"      --py-rate HZ         how often Python stacks are read on a CPU (default "
	PY_DEFAULT_HZ_TEXT "), besides\n"
	"                           when a thread leaves the CPU and at native probe hits\n"
	"      --start-paused       attach but record nothing until SIGUSR1; SIGUSR1 toggles\n"
	"      --buffer-size MB     ring buffer memory, a power of two (default 8), split\n"
	"                           among the CPUs (a ring each, at least 256 KB)\n"
	"      --max-size SIZE      stop when the file reaches SIZE (500M, 2G); the file stays valid\n"
	"      --max-overhead PCT   when the probes cost the target more than PCT% of its CPU time\n"
	"                           for a second, stop probing the costliest functions (default 20;\n"
	"                           0: never)\n"
	"  -q, --quiet              no summary\n"
	"  -v, --verbose            debug messages, libbpf's included\n"
	"  -h, --help               this text\n"
	"  -V, --version            tracer's version\n"
	"\n"
	"Recording stops on Ctrl-C, SIGTERM, after -d, or when every target has exited.\n"
	"SIGUSR1 pauses and resumes it.\n"
	"\n"
	"Other commands (each with --help):\n"
	"  tracer list -p PID|BINARY [PATTERN]   functions that can be probed, and what a probe costs\n"
	"  tracer packs [-p PID]                 the probe packs, and which apply to a process\n"
	"  tracer report TRACE [--by ...]        where the time went: stages, verdict, percentiles\n"
	"  tracer merge A B ... -o ALL           one timeline of several recordings\n"
	"  tracer export TRACE --jsonl|--csv     one row per span, for query engines\n"
	"  tracer repair TRACE                   close a trace that was cut short\n"
	"\n"
	"Examples:\n"
	"  sudo tracer -p $(pidof ffmpeg) -d 5\n"
	"  sudo tracer -p 1234 -u 'decode:libavcodec.so.*:avcodec_send_*' -o decode.json.gz\n"
	"  sudo tracer -p 1234 -P pipeline --min-dur 50us\n"
	"  sudo tracer -o run.json -- ffmpeg -i in.mp4 -f null -\n"
	"  sudo tracer -a -u 'decode:libavcodec.so.*:avcodec_send_packet' -d 10\n";

static const char top_usage_text[] =
	"Usage: tracer top -p PID[,PID...] [options]\n"
	"       tracer top [options] -- COMMAND [ARGS...]\n"
	"\n"
	"A recording shown live, redrawn every second like perf top and py-spy top: the\n"
	"pipeline's stages with their running, runnable, queue-wait, blocked and idle shares, the\n"
	"verdict, and the spans with the most self time in the last second (their rate, and their\n"
	"totals and percentiles since the start). q or Ctrl-C quits. It fits any terminal size and\n"
	"writes no file unless -o is given; piped, it prints a frame every second.\n"
	"\n"
	"      --sort COL           order the spans by self time in the last second (self, the\n"
	"                           default), or by total, count or p99 since the start\n"
	"\n"
	"Examples:\n"
	"  sudo tracer top -p $(pidof ffmpeg)\n"
	"  sudo tracer top -p 1234 -P pipeline -o run.json\n"
	"\n"
	"It takes the options of a recording:\n";

/* -h prints the usage of the command that parses: record's or top's */
static const char *help_text = usage_text;

static int parse_pids(struct record_opts *o, const char *arg)
{
	char *copy = xstrdup(arg), *save = NULL;
	int ret = strspn(arg, ", \t\n") == strlen(arg) ? -1 : 0; /* no pid at all */

	/* commas as perf takes them; blanks as "$(pidof x)" gives them, quoted */
	for (char *tok = strtok_r(copy, ", \t\n", &save); tok;
	     tok = strtok_r(NULL, ", \t\n", &save)) {
		int pid;

		if (parse_pid(tok, &pid)) {
			ret = -1;
			break;
		}
		o->pids = xrealloc(o->pids, o->npids + 1, sizeof(int));
		o->pids[o->npids++] = pid;
	}
	free(copy);
	return ret;
}

/* Options without a short form. */
enum record_option {
	OPT_MIN_DUR = 256,
	OPT_NO_SCHED,
	OPT_BUFFER_SIZE,
	OPT_ENTRY_ONLY,
	OPT_NO_ARGS,
	OPT_START_PAUSED,
	OPT_FOLLOW,
	OPT_NO_FOLLOW,
	OPT_MAX_SIZE,
	OPT_MAX_OVERHEAD,
	OPT_NO_PYTHON,
	OPT_NO_PACK,
	OPT_PY_RATE,
	OPT_TO,
	OPT_SORT,
};

static const struct option longopts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "uprobe", required_argument, NULL, 'u' },
	{ "pack", required_argument, NULL, 'P' },
	{ "duration", required_argument, NULL, 'd' },
	{ "output", required_argument, NULL, 'o' },
	{ "min-dur", required_argument, NULL, OPT_MIN_DUR },
	{ "no-sched", no_argument, NULL, OPT_NO_SCHED },
	{ "buffer-size", required_argument, NULL, OPT_BUFFER_SIZE },
	{ "entry-only", no_argument, NULL, OPT_ENTRY_ONLY },
	{ "no-args", no_argument, NULL, OPT_NO_ARGS },
	{ "start-paused", no_argument, NULL, OPT_START_PAUSED },
	{ "follow", no_argument, NULL, OPT_FOLLOW }, /* the default now; kept for old command lines */
	{ "no-follow", no_argument, NULL, OPT_NO_FOLLOW },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "max-overhead", required_argument, NULL, OPT_MAX_OVERHEAD },
	{ "no-python", no_argument, NULL, OPT_NO_PYTHON },
	{ "no-pack", required_argument, NULL, OPT_NO_PACK },
	{ "py-rate", required_argument, NULL, OPT_PY_RATE },
	{ "to", required_argument, NULL, OPT_TO },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "all-processes", no_argument, NULL, 'a' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

/* One option of tracer's own (record) command line: 0, or 2 after a usage error. */
/* --no-pack a,b: each a pack of the packs folder (or "all"), so that a typo is not a silent
 * no-op */
static int add_no_packs(struct record_opts *o, char *list)
{
	struct probe_pack *all = NULL;
	int n = probe_pack__list(&all), ret = 0;
	char *save = NULL;

	for (char *name = strtok_r(list, ",", &save); name && !ret;
	     name = strtok_r(NULL, ",", &save)) {
		struct near_names nr;
		char near[256] = "";
		bool known = !strcmp(name, "all");

		near_names__init(&nr, name);
		for (int i = 0; i < n && !known; i++) {
			known = !strcmp(all[i].name, name);
			near_names__offer(&nr, all[i].name);
		}
		near_names__format(&nr, near, sizeof(near));
		near_names__free(&nr);
		if (!known) {
			ret = usage_error(NULL, "--no-pack: no probe pack '%s'%s (tracer packs lists "
					  "them)", name, near);
			break;
		}
		o->no_packs = xrealloc(o->no_packs, o->nno_packs + 1, sizeof(char *));
		o->no_packs[o->nno_packs++] = name;
	}
	for (int i = 0; i < n; i++)
		probe_pack__free(&all[i]);
	free(all);
	return ret;
}

static int record_option(int c, struct record_opts *o, char **argv)
{
	char err[512];
	long mb, hz;

	switch (c) {
	case 'p':
		if (parse_pids(o, optarg))
			return usage_error(NULL, "bad pid list '%s': want PID[,PID...]", optarg);
		return 0;
	case 'u':
		if (probe_specs__add_spec(&o->specs, optarg, err, sizeof(err)))
			return usage_error(NULL, "%s", err);
		return 0;
	case 'P':
		o->packs = xrealloc(o->packs, o->npacks + 1, sizeof(char *));
		o->packs[o->npacks++] = optarg;
		return 0;
	case 'd':
		if (parse_duration(optarg, 1000000000ull, &o->duration_ns) ||
		    !o->duration_ns)
			return usage_error(NULL, "bad duration '%s': want seconds, or 500ms, 2m",
					   optarg);
		return 0;
	case 'o':
		o->output = optarg;
		return 0;
	case OPT_MIN_DUR:
		if (parse_duration(optarg, 1000, &o->min_dur_ns))
			return usage_error(NULL, "bad --min-dur '%s': want microseconds, or 50us, 2ms",
					   optarg);
		return 0;
	case OPT_NO_SCHED:
		o->no_sched = true;
		return 0;
	case OPT_ENTRY_ONLY:
		o->entry_only = true;
		return 0;
	case OPT_NO_ARGS:
		o->no_args = true;
		return 0;
	case OPT_START_PAUSED:
		o->start_paused = true;
		return 0;
	case OPT_FOLLOW:
		o->follow_given = true;
		return 0;
	case OPT_NO_FOLLOW:
		o->no_follow = true;
		return 0;
	case OPT_MAX_SIZE:
		if (parse_size(optarg, &o->max_size) || o->max_size < 4096)
			return usage_error(NULL, "bad --max-size '%s': want bytes of at least 4k, or "
					   "with k, M or G (500M)",
					   optarg);
		return 0;
	case OPT_MAX_OVERHEAD: {
		char *end;

		o->max_overhead = strtod(optarg, &end);
		if (end == optarg || *end || !(o->max_overhead >= 0 && o->max_overhead <= 1000))
			return usage_error(NULL, "bad --max-overhead '%s': want a percentage of the "
					   "target's CPU time (20), or 0 for no budget", optarg);
		return 0;
	}
	case 'a':
		o->system_wide = true;
		return 0;
	case OPT_NO_PYTHON:
		o->no_python = true;
		return 0;
	case OPT_NO_PACK:
		return add_no_packs(o, optarg);
	case OPT_TO:
		if (push__check_url(optarg, err, sizeof(err)))
			return usage_error(NULL, "--to: %s", err);
		free(o->to);
		o->to = xstrdup(optarg);
		/* the command line goes into the trace's metadata: never the password */
		ch__hide_password(optarg);
		return 0;
	case OPT_SORT: {
		enum report_sort sort;

		if (!o->top)
			return usage_error(NULL, "%s", "--sort orders tracer top's table (tracer report "
						 "has its own)");
		if (report_sort__parse(optarg, &sort))
			return usage_error(NULL, "bad --sort '%s': want self, total, count or p99",
					   optarg);
		o->top_sort = sort;
		return 0;
	}
	case OPT_PY_RATE:
		if (parse_long(optarg, 1, 10000, &hz))
			return usage_error(NULL, "bad --py-rate '%s': want 1 to 10000 (Hz)", optarg);
		o->py_hz = hz;
		return 0;
	case OPT_BUFFER_SIZE:
		if (parse_long(optarg, 1, 1024, &mb) || (mb & (mb - 1)))
			return usage_error(NULL, "bad --buffer-size '%s': want a power of two, 1 to "
					   "1024 (MB)",
					   optarg);
		o->buffer_mb = mb;
		return 0;
	case 'q':
		verbosity = VERB_QUIET;
		return 0;
	case 'v':
		verbosity = VERB_DEBUG;
		return 0;
	case 'h':
		if (help_text != usage_text) /* top: its text, then the options it shares */
			fputs(help_text, stdout);
		fputs(help_text != usage_text ? strstr(usage_text, "\nTarget:") + 1 : usage_text,
		      stdout);
		exit(0);
	case 'V':
		printf("tracer %s\n", TRACER_VERSION);
		exit(0);
	case ':':
		return usage_error(NULL, "option '%s' needs a value", argv[optind - 1]);
	default:
		return unknown_option(NULL, argv[optind - 1], longopts);
	}
	return 0;
}

/* What to trace: pids, a command after --, or -a, and only one of them. */
static int check_target(int argc, char **argv, struct record_opts *o)
{
	if (optind < argc && !strcmp(argv[optind - 1], "--"))
		o->cmd = &argv[optind];
	else if (optind < argc)
		return usage_error(NULL, "unexpected argument '%s' (a command to launch goes after --)",
				   argv[optind]);
	/* perf's idiom `-p PID -- sleep 5` records PID while the command runs: here that is -d */
	if (o->cmd && o->npids && !strcmp(o->cmd[0], "sleep") && o->cmd[1] && !o->cmd[2] &&
	    !parse_duration(o->cmd[1], 1000000000ull, &(uint64_t){ 0 }))
		return usage_error(NULL, "give -p PID or -- COMMAND, not both: -d %s records "
					 "the process as long as -- sleep %s would",
				   o->cmd[1], o->cmd[1]);
	if (o->cmd && o->npids)
		return usage_error(NULL, "%s", "give -p PID or -- COMMAND, not both (-d DUR "
					 "records for a while)");
	if (o->system_wide && (o->npids || o->cmd || o->follow_given))
		return usage_error(NULL, "%s", "-a traces every process mapping the probed objects: no -p, "
					 "--follow or command with it");
	if (!o->npids && !o->cmd && !o->system_wide)
		return usage_error(NULL, "%s", "no target: give -p PID, -- COMMAND to launch one, or -a");
	if (o->follow_given && o->no_follow)
		return usage_error(NULL, "%s", "give --follow or --no-follow, not both");
	/* the pipeline is the process tree: its workers may be children (a DataLoader's, a pool) */
	o->follow = !o->no_follow && !o->system_wide;
	if (o->to && ((o->output && !strcmp(o->output, "-")) || (o->top && !o->output)))
		return usage_error(NULL, "%s", "--to pushes the trace file: give -o FILE (not -)");
	return 0;
}

static int parse_record(int argc, char **argv, struct record_opts *o)
{
	int c, ret, after_p = 0;

	o->buffer_mb = 8;
	o->py_hz = PY_DEFAULT_HZ;
	opterr = 0;
	for (;;) {
		c = getopt_long(argc, argv, "+:p:u:P:d:o:aqvhV", longopts, NULL);
		/* -p $(pidof x) unquoted: the pids after the first come as arguments of their own */
		if (c == -1 && after_p == optind && optind < argc &&
		    !parse_pids(o, argv[optind])) {
			after_p = ++optind;
			continue;
		}
		if (c == -1)
			break;
		ret = record_option(c, o, argv);
		if (ret)
			return ret;
		after_p = c == 'p' ? optind : 0;
	}
	return check_target(argc, argv, o);
}

static int run(int argc, char **argv, bool top)
{
	struct record_opts opts = { .top = top, .max_overhead = BUDGET_DEFAULT_PCT };
	int ret;

	ret = parse_record(argc, argv, &opts);
	if (!ret)
		ret = record__run(&opts);
	probe_specs__free(&opts.specs);
	free(opts.pids);
	free(opts.packs);
	free(opts.no_packs);
	free(opts.to);
	return ret;
}

int cmd_top(int argc, char **argv)
{
	help_text = top_usage_text;
	return run(argc, argv, true);
}

int cmd_record(int argc, char **argv)
{
	return run(argc, argv, false);
}

