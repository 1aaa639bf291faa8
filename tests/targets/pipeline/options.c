// SPDX-License-Identifier: MIT
/* The pipeline's command line (--help). */
#define _GNU_SOURCE
#include "pipeline.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct config cfg = {
	.frames = 200,
	.decoders = 2,
	.operators = 2,
	.queue_cap = 4,
	.read_us = -1,
	.decode_us = -1,
	.op_us = -1,
	.write_us = -1,
	.bottleneck = "decode",
	.log_path = NULL,
	.forever = false,
	.wait_signal = false,
	.start_delay_ms = -1,
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: pipeline [OPTIONS]\n"
"Synthetic traced pipeline: reader -> q_packets -> decode-K -> q_frames -> op-K -> q_out -> writer.\n"
"Every work function busy-spins on CLOCK_MONOTONIC for the configured time.\n"
"\n"
"  --frames N           frames to read, process and write, then exit 0 (default 200)\n"
"  --forever            run until SIGINT/SIGTERM (ignores --frames), then drain and exit 0\n"
"  --decoders D         decoder threads decode-0..decode-D-1 (default 2, 1..%d)\n"
"  --operators O        operator threads op-0..op-O-1 (default 2, 1..%d)\n"
"  --queue-cap N        capacity of each bounded queue (default 4)\n"
"  --bottleneck PROFILE cost profile, in microseconds (default decode):\n"
"                         decode:   read 200, decode 4000, each op  200, write 100\n"
"                         operator: read 200, decode  500, each op 2000, write 100\n"
"                         none:     read 100, decode  100, each op  100, write 100\n"
"  --read-us US         read_packet time (overrides the profile)\n"
"  --decode-us US       decode_frame time (overrides the profile)\n"
"  --op-us US           time of each of op_resize, op_normalize, op_infer (overrides the profile)\n"
"  --write-us US        write_frame time (overrides the profile)\n"
"  --log FILE           at exit, write one line per call of every probed function:\n"
"                         TID FUNCTION START_NS END_NS [OPERATOR]   (CLOCK_MONOTONIC)\n"
"                       after a header: '# pid PID', '# config ...', '# thread TID NAME' per\n"
"                       worker, '# written N', '# dropped N'. With --forever each thread keeps\n"
"                       its first %d records and counts the rest in '# dropped'.\n"
"  --wait-signal        print 'ready PID' on stdout, wait for SIGUSR1, then start the threads\n"
"  --start-delay-ms N   print 'ready PID' on stdout, sleep N ms, then start the threads\n"
"  -h, --help           show this help\n"
"\n"
"Probed functions: read_packet, decode_frame, run_operator (calls op_resize, op_normalize,\n"
"op_infer), queue_push, queue_pop, write_frame. SIGINT/SIGTERM stop reading new frames; the\n"
"frames in flight are drained, the log is written and the exit status is 0.\n"
"Exit status: 0 success, 1 runtime error, 2 bad option.\n",
		MAX_WORKERS, MAX_WORKERS, LOG_MAX_FOREVER);
}

static void bad_option(const char *fmt, const char *a, const char *b)
{
	fputs("pipeline: ", stderr);
	fprintf(stderr, fmt, a, b);
	fputs(" (see --help)\n", stderr);
	exit(2);
}

static long parse_num(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		char range[64];
		snprintf(range, sizeof(range), "an integer in [%ld, %ld]", min, max);
		fprintf(stderr, "pipeline: invalid value '%s' for --%s: expected %s (see --help)\n", s, opt,
			range);
		exit(2);
	}
	return v;
}

enum {
	OPT_FRAMES = 256,
	OPT_FOREVER,
	OPT_DECODERS,
	OPT_OPERATORS,
	OPT_QUEUE_CAP,
	OPT_BOTTLENECK,
	OPT_READ_US,
	OPT_DECODE_US,
	OPT_OP_US,
	OPT_WRITE_US,
	OPT_LOG,
	OPT_WAIT_SIGNAL,
	OPT_START_DELAY_MS,
};

void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"frames", required_argument, NULL, OPT_FRAMES},
		{"forever", no_argument, NULL, OPT_FOREVER},
		{"decoders", required_argument, NULL, OPT_DECODERS},
		{"operators", required_argument, NULL, OPT_OPERATORS},
		{"queue-cap", required_argument, NULL, OPT_QUEUE_CAP},
		{"bottleneck", required_argument, NULL, OPT_BOTTLENECK},
		{"read-us", required_argument, NULL, OPT_READ_US},
		{"decode-us", required_argument, NULL, OPT_DECODE_US},
		{"op-us", required_argument, NULL, OPT_OP_US},
		{"write-us", required_argument, NULL, OPT_WRITE_US},
		{"log", required_argument, NULL, OPT_LOG},
		{"wait-signal", no_argument, NULL, OPT_WAIT_SIGNAL},
		{"start-delay-ms", required_argument, NULL, OPT_START_DELAY_MS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const long max_us = 10L * 1000 * 1000;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *name = NULL;

		for (const struct option *o = longopts; o->name; o++)
			if (o->val == c)
				name = o->name;
		switch (c) {
		case OPT_FRAMES:
			cfg.frames = parse_num(name, optarg, 0, INT_MAX);
			break;
		case OPT_FOREVER:
			cfg.forever = true;
			break;
		case OPT_DECODERS:
			cfg.decoders = (int)parse_num(name, optarg, 1, MAX_WORKERS);
			break;
		case OPT_OPERATORS:
			cfg.operators = (int)parse_num(name, optarg, 1, MAX_WORKERS);
			break;
		case OPT_QUEUE_CAP:
			cfg.queue_cap = (int)parse_num(name, optarg, 1, 1 << 20);
			break;
		case OPT_BOTTLENECK:
			if (strcmp(optarg, "decode") && strcmp(optarg, "operator") && strcmp(optarg, "none"))
				bad_option("invalid value '%s' for --%s: expected decode, operator or none",
					   optarg, name);
			cfg.bottleneck = optarg;
			break;
		case OPT_READ_US:
			cfg.read_us = parse_num(name, optarg, 0, max_us);
			break;
		case OPT_DECODE_US:
			cfg.decode_us = parse_num(name, optarg, 0, max_us);
			break;
		case OPT_OP_US:
			cfg.op_us = parse_num(name, optarg, 0, max_us);
			break;
		case OPT_WRITE_US:
			cfg.write_us = parse_num(name, optarg, 0, max_us);
			break;
		case OPT_LOG:
			cfg.log_path = optarg;
			break;
		case OPT_WAIT_SIGNAL:
			cfg.wait_signal = true;
			break;
		case OPT_START_DELAY_MS:
			cfg.start_delay_ms = parse_num(name, optarg, 0, 24L * 3600 * 1000);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			bad_option("option '%s' needs a value%s", argv[optind - 1], "");
			break;
		default:
			bad_option("unknown option '%s'%s", argv[optind - 1], "");
		}
	}
	if (optind < argc)
		bad_option("unexpected argument '%s'%s", argv[optind], "");
	if (cfg.wait_signal && cfg.start_delay_ms >= 0)
		bad_option("--wait-signal and --start-delay-ms exclude each other%s%s", "", "");

	/* The profile fills in what was not given explicitly. */
	long p_read = 200, p_decode = 4000, p_op = 200, p_write = 100;
	if (strcmp(cfg.bottleneck, "operator") == 0) {
		p_decode = 500;
		p_op = 2000;
	} else if (strcmp(cfg.bottleneck, "none") == 0) {
		p_read = p_decode = p_op = p_write = 100;
	}
	if (cfg.read_us < 0)
		cfg.read_us = p_read;
	if (cfg.decode_us < 0)
		cfg.decode_us = p_decode;
	if (cfg.op_us < 0)
		cfg.op_us = p_op;
	if (cfg.write_us < 0)
		cfg.write_us = p_write;
}

