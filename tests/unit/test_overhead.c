// SPDX-License-Identifier: MIT
/* The overhead accounting: classifying probed sites from their files, and counting hits through
 * the kernel's BPF statistics on empty probes of our own function (root only: it attaches). */
#include "record/attach.h"
#include "record/overhead.h"
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <unistd.h>

__asm__(".text\n.p2align 4\n.globl unit_site\n.type unit_site,@function\nunit_site:\n"
	"push %rbp\nmov %rsp,%rbp\nlea 1(%rdi),%eax\npop %rbp\nret\n"
	".size unit_site,.-unit_site\n");
int unit_site(int x);

static void test_classify(void)
{
	static const uint8_t code[48] = {
		[0] = 0x55,
		[16] = 0x48, 0x83, 0xec, 0x08,
		[32] = 0x0f, 0x1f, 0x44, 0x00, 0x00,
		[46] = 0x0f, 0x1f, /* a nopl cut off by the end of the file */
	};
	char path[] = "/tmp/test_overhead.XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	CHECK(write(fd, code, sizeof(code)) == sizeof(code));
	close(fd);
	CHECK(insn__classify_site(path, 0) == INSN_EMULATED);
	CHECK(insn__classify_site(path, 16) == INSN_STEPPED);
	CHECK(insn__classify_site(path, 32) == INSN_OPTIMIZED);
	/* past the end of the file, or no file: the expensive kind */
	CHECK(insn__classify_site(path, 4096) == INSN_STEPPED);
	CHECK(insn__classify_site(path, 46) == INSN_STEPPED); /* cannot be decoded: not cheap */
	CHECK(insn__classify_site("/nonexistent", 0) == INSN_STEPPED);
	unlink(path);
}

/* Calibrates, then runs empty probes on unit_site with the statistics on: the runs are counted
 * exactly, and the totals are the calls given times the calibrated and measured costs. */
static void test_accounting(void)
{
	const int calls = 1000, me = getpid();
	const uint64_t split[INSN_CLASS_MAX] = { [INSN_EMULATED] = 750, [INSN_STEPPED] = 250 };
	int fds[SPAN_PROGS] = { -1, -1, -1 };
	struct empty_probes e;
	struct overhead o;
	uint64_t offset = 0;
	char line[512], *text = NULL;
	size_t len = 0;
	cJSON *meta, *j;
	FILE *f;
	int x = 0;

	CHECK(overhead__start(&o, &me, 1, attach__multi_supported()) == 0);
	CHECK(o.cal.ok);
	for (int c = 0; c < INSN_CLASS_MAX; c++)
		CHECK(o.cal.entry_ns[c] >= 0);
	CHECK(o.cal.return_ns >= 0);

	/* the file offset of unit_site, from our own mapping */
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long s, t, off;

		if (sscanf(line, "%llx-%llx %*s %llx", &s, &t, &off) == 3 &&
		    (uintptr_t)unit_site >= s && (uintptr_t)unit_site < t)
			offset = (uintptr_t)unit_site - s + off;
	}
	if (f)
		fclose(f);
	CHECK(offset != 0);
	CHECK(empty_probes__open(&e, o.multi) == 0);
	CHECK(empty_probes__attach(&e, "/proc/self/exe", &offset, 1, me, true) == 0);
	CHECK(empty_probes__attach(&e, "/proc/self/exe", &offset, 1, me, false) == 0);
	for (int i = 0; i < calls; i++)
		x = unit_site(x);
	CHECK(x == calls);
	empty_probes__detach(&e);
	fds[SPAN_PROG_ENTRY] = e.prog_fd[0];
	fds[SPAN_PROG_RETURN] = e.prog_fd[1];
	overhead__finish(&o, fds, NULL, 0, split, 0, calls);
	empty_probes__close(&e);

	CHECK(o.done);
	CHECK(o.stats_fd < 0); /* statistics are off once recording is over */
	/* no overhead__sample() call closed the first window: every run was counted */
	CHECK(o.sampled_runs == 2 * (uint64_t)calls);
	CHECK(o.stats_on_ns > 0);
	/* an empty program's measured run time is the statistics' own clock reads: charged
	 * less them, next to nothing (half of what they measured at most) */
	CHECK(o.cal.stats_ns > 0);
	CHECK(o.span_bpf_ns >= 0 && o.span_bpf_ns < calls * o.cal.stats_ns);
	CHECK(o.entry_hits[INSN_EMULATED] + o.entry_hits[INSN_OPTIMIZED] +
		      o.entry_hits[INSN_STEPPED] == (uint64_t)calls);
	CHECK(o.entry_hits[INSN_EMULATED] == 750);
	CHECK(o.entry_hits[INSN_STEPPED] == 250);
	CHECK(o.return_hits == (uint64_t)calls);
	CHECK(o.span_bpf_runs == 2 * (uint64_t)calls);
	CHECK(o.cal.sweep_bytes > 0 && o.cal.sweep_ns > 0);
	CHECK(o.cal.cold_entry_ns >= 0 && o.cal.cold_return_ns >= 0);
	CHECK(o.trap_entry_ns == 750 * overhead__entry_ns(&o, INSN_EMULATED) +
				     250 * overhead__entry_ns(&o, INSN_STEPPED));
	CHECK(o.trap_return_ns == calls * overhead__return_ns(&o));
	if (o.target_cpu_ns)
		CHECK(overhead__share(&o) == overhead__total_ns(&o) / o.target_cpu_ns);

	f = open_memstream(&text, &len);
	overhead__print(f, &o);
	fclose(f);
	CHECK(text && !strncmp(text, "overhead: ", 10) && strstr(text, "1000 entries, 1000 returns"));
	free(text);

	meta = cJSON_CreateObject();
	overhead__add_json(&o, meta);
	j = cJSON_GetObjectItem(meta, "overhead");
	CHECK(j != NULL);
	CHECK(cJSON_GetObjectItem(j, "return_hits") &&
	      cJSON_GetObjectItem(j, "return_hits")->valuedouble == calls);
	CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "entry_hits"), "single-stepped") &&
	      cJSON_GetObjectItem(cJSON_GetObjectItem(j, "entry_hits"), "single-stepped")
			      ->valuedouble == 250);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "calibration"), "ok")));
	cJSON_Delete(meta);
	overhead__free(&o);
}

/* The mean run time of the span programs comes from the statistics windows, less the windows
 * a preemption inflated, less what the statistics add to a run: three windows at 200 ns a run
 * (entries), 100 ns (returns) and 150 ns (exits: the exit program, where a function is probed
 * at its exits), and one where an entry waited 5 ms for a CPU; windows as the event loop
 * records them. The statistics add 40 ns a run. */
static void test_preempted_window(void)
{
	const uint64_t calls[INSN_CLASS_MAX] = { [INSN_EMULATED] = 1000 };
	const int me = getpid();
	int fds[SPAN_PROGS];
	struct empty_probes e;
	struct overhead o;
	cJSON *meta, *j;

	CHECK(overhead__start(&o, &me, 1, attach__multi_supported()) == 0);
	CHECK(empty_probes__open(&e, o.multi) == 0);
	fds[SPAN_PROG_ENTRY] = fds[SPAN_PROG_EXIT] = e.prog_fd[0];
	fds[SPAN_PROG_RETURN] = e.prog_fd[1];
	overhead__watch(&o, fds);
	o.cal.stats_ns = 40;
	free(o.win);
	o.win = calloc(4, sizeof(*o.win));
	o.nwin = 4;
	for (int k = 0; k < 4; k++) {
		o.win[k].runs[SPAN_PROG_ENTRY] = o.win[k].runs[SPAN_PROG_RETURN] = 100;
		o.win[k].ns[SPAN_PROG_ENTRY] = 100 * 200;
		o.win[k].ns[SPAN_PROG_RETURN] = 100 * 100;
		o.win[k].runs[SPAN_PROG_EXIT] = 25;
		o.win[k].ns[SPAN_PROG_EXIT] = 25 * 150;
	}
	o.win[2].ns[SPAN_PROG_ENTRY] += 5000000;
	/* 1000 entry hits, 200 of them at exits; 800 returns */
	overhead__finish(&o, fds, NULL, 0, calls, 200, 800);
	CHECK(o.windows_dropped == 1);
	CHECK(o.sampled_runs == 300 + 400 + 100);
	CHECK(o.exit_hits == 200);
	CHECK(o.span_bpf_ns > 800 * 160.0 + 200 * 110.0 + 800 * 60.0 - 1 &&
	      o.span_bpf_ns < 800 * 160.0 + 200 * 110.0 + 800 * 60.0 + 1);
	meta = cJSON_CreateObject();
	overhead__add_json(&o, meta);
	j = cJSON_GetObjectItem(meta, "overhead");
	CHECK(j && cJSON_GetObjectItem(j, "bpf_stats_windows_preempted") &&
	      cJSON_GetObjectItem(j, "bpf_stats_windows_preempted")->valuedouble == 1);
	cJSON_Delete(meta);
	empty_probes__close(&e);
	overhead__free(&o);
}

/* The trap time on the numbers of a recording of gst-launch encoding audio (audiotestsrc !
 * audioconvert ! audioresample ! vorbisenc ! oggmux ! filesink, 30,000 buffers): 2.5 s of its
 * CPU time over 121,372 calls, 20 us a call, far more than the 8.7 us sweep, so each hit is
 * charged the misses as well (the calibration then said 523 + 247 ns hot, +499 and +112 ns
 * cold). Its CPU time rose 0.25 s (10%, interleaved rounds); 93 ms of traps were charged
 * before (7.7% with the BPF time), 167 ms now. A target that calls more often than a sweep
 * takes (a tight loop) is charged the hot costs. */
static void test_cold_traps(void)
{
	struct overhead o = {
		.cal = { .entry_ns = { 523, 364, 9681 }, .return_ns = 247, .cold_entry_ns = 499,
			 .cold_return_ns = 112, .sweep_ns = 8700, .sweep_bytes = 1 << 20, .ok = true },
		.entry_hits = { [INSN_EMULATED] = 121372 },
		.return_hits = 121372,
		.target_cpu_ns = 2520000000ULL,
	};

	overhead__charge_traps(&o);
	CHECK(o.cold);
	CHECK(o.trap_entry_ns == 121372 * (523.0 + 499));
	CHECK(o.trap_return_ns == 121372 * (247.0 + 112));
	CHECK(overhead__entry_ns(&o, INSN_STEPPED) == 9681 + 499);
	/* 1,000 calls a ms: 1 us of the target's time a call */
	o.target_cpu_ns = 121372000ULL;
	overhead__charge_traps(&o);
	CHECK(!o.cold);
	CHECK(o.trap_entry_ns == 121372 * 523.0 && o.trap_return_ns == 121372 * 247.0);
	/* no cold calibration (it failed): hot */
	o.target_cpu_ns = 2520000000ULL;
	o.cal.sweep_ns = 0;
	overhead__charge_traps(&o);
	CHECK(!o.cold && o.trap_entry_ns == 121372 * 523.0);
}

int main(void)
{
	RUN(test_classify);
	RUN(test_cold_traps);
	if (geteuid() == 0) {
		RUN(test_accounting);
		RUN(test_preempted_window);
	} else {
		printf("ok test_accounting # skip: needs root (it attaches uprobes)\n");
	}
	UNIT_EXIT();
}
