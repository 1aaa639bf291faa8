// SPDX-License-Identifier: MIT
/* Unit test of userspace/probe/list.c's logic: the cost shown per class (the site it is shown for:
 * test_site.c), which packs apply to a process, and the shipped packs
 * (ffmpeg, glibc). Run from the repository root (packs are read from probes/). */
#include "probe/list.h"
#include "probe/packs.h"
#include "unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static void test_costs(void)
{
	CHECK_STR(list__insn_cost(INSN_EMULATED), "0.7us");
	CHECK_STR(list__insn_cost(INSN_OPTIMIZED), "0.5us");
	CHECK_STR(list__insn_cost(INSN_STEPPED), "10us");
}

static struct mapped_object obj(const char *base)
{
	struct mapped_object o = { 0 };

	o.base = (char *)base;
	o.path = (char *)base;
	o.open_path = (char *)base;
	return o;
}

static const struct probe_pack *find_pack(const struct pack_set *set, const char *name,
					  const struct probe_specs **specs)
{
	for (size_t i = 0; i < set->cnt; i++) {
		if (!strcmp(set->packs[i].name, name)) {
			*specs = &set->specs[i];
			return &set->packs[i];
		}
	}
	return NULL;
}

static const struct probe_spec *find_spec(const struct probe_specs *specs, const char *function)
{
	for (size_t i = 0; specs && i < specs->cnt; i++)
		if (!strcmp(specs->v[i].function, function))
			return &specs->v[i];
	return NULL;
}

/* The packs shipped in probes/: which processes get them by default, and what they probe. */
static void test_shipped_packs(void)
{
	struct mapped_object ffmpeg[] = { obj("ffmpeg"), obj("libavutil.so.57.28.100"),
					  obj("libavcodec.so.59.37.100"), obj("libc.so.6") };
	struct mapped_object plain[] = { obj("bash"), obj("libc.so.6") };
	struct mapped_object pipeline[] = { obj("pipeline"), obj("libc.so.6") };
	const struct probe_specs *ff_specs = NULL, *gl_specs = NULL, *pl_specs = NULL;
	const struct probe_pack *ff, *gl, *pl;
	const struct probe_spec *s;
	struct pack_set set;
	char err[512] = "";

	setenv("TRACER_PROBES", "probes", 1);
	CHECK(pack_set__load(&set, err, sizeof(err)) == 0);
	ff = find_pack(&set, "ffmpeg", &ff_specs);
	gl = find_pack(&set, "glibc", &gl_specs);
	pl = find_pack(&set, "pipeline", &pl_specs);
	CHECK(ff && gl && pl);
	if (!ff || !gl || !pl)
		goto out;
	CHECK(probe_pack__applies(ff, ffmpeg, 4));
	CHECK(!probe_pack__applies(ff, plain, 2));
	CHECK(!probe_pack__applies(ff, pipeline, 2));
	CHECK(probe_pack__applies(pl, pipeline, 2));
	CHECK(!probe_pack__applies(pl, ffmpeg, 4));
	/* every process maps libc: glibc is only used when asked for */
	CHECK(gl->when_cnt == 0);
	CHECK(!probe_pack__applies(gl, ffmpeg, 4) && !probe_pack__applies(gl, plain, 2));

	s = find_spec(ff_specs, "av_thread_message_queue_recv");
	CHECK(s && s->cat == CAT_QUEUE && s->name && !strcmp(s->name, "Wait on Input Queue"));
	s = find_spec(ff_specs, "avcodec_send_packet");
	CHECK(s && s->cat == CAT_DECODE && !strcmp(s->object, "libavcodec.so.*"));
	s = find_spec(ff_specs, "sws_scale_frame");
	CHECK(s && s->cat == CAT_OPERATOR);
	/* single-stepped (sub first) or very hot: left out of the default pack */
	CHECK(!find_spec(ff_specs, "av_buffersink_get_frame_flags"));
	CHECK(!find_spec(ff_specs, "sws_scale") && !find_spec(ff_specs, "sws_send_slice"));
	CHECK(!find_spec(ff_specs, "av_frame_unref") && !find_spec(ff_specs, "av_packet_unref"));
	s = find_spec(gl_specs, "pthread_cond_wait");
	CHECK(s && s->cat == CAT_QUEUE && !strcmp(s->object, "libc.so.*"));
	CHECK(!find_spec(gl_specs, "pthread_mutex_lock"));
out:
	pack_set__free(&set);
}

/* A malformed pack in the folder is left out with a warning; the others still load. */
static void test_pack_set_skips_malformed(void)
{
	char dir[] = "/tmp/tracer-test-packs-XXXXXX", path[128];
	const struct probe_specs *specs = NULL;
	struct pack_set set;
	char err[512] = "";
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/good.json", dir);
	f = fopen(path, "w");
	fputs("{ \"name\": \"good\",\n"
	      "  \"probes\": [ { \"function\": \"f\", \"category\": \"io\" } ] }", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/bad.json", dir);
	f = fopen(path, "w");
	fputs("{ \"name\": \"bad\", \"probes\": [ { \"function\": \"f\" } ] }", f);
	fclose(f);
	setenv("TRACER_PROBES", dir, 1);
	CHECK(pack_set__load(&set, err, sizeof(err)) == 0);
	CHECK(set.cnt == 1);
	CHECK(find_pack(&set, "good", &specs) && specs->cnt == 1);
	pack_set__free(&set);
	unlink(path);
	snprintf(path, sizeof(path), "%s/good.json", dir);
	unlink(path);
	rmdir(dir);
	/* no folder: an error that names it */
	CHECK(pack_set__load(&set, err, sizeof(err)) < 0);
	CHECK(strstr(err, dir) != NULL);
	pack_set__free(&set);
}

int main(void)
{
	RUN(test_costs);
	RUN(test_shipped_packs);
	RUN(test_pack_set_skips_malformed);
	UNIT_EXIT();
}
