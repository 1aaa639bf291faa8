// SPDX-License-Identifier: MIT
/* Unit test of userspace/probe/probe_spec.c: `-u` specs and probe packs. Run from the repository
 * root (the real packs are read from probes/). */
#include <errno.h>
#include <glob.h>
#include <stdlib.h>

#include "probe/probe_spec.h"
#include "probe/struct_fields.h"
#include "unit.h"

static bool has(const char *s, const char *sub)
{
	return s && strstr(s, sub);
}

static bool starts(const char *s, const char *prefix)
{
	return s && !strncmp(s, prefix, strlen(prefix));
}

static void test_category_names(void)
{
	enum category cat = CAT_MAX;

	for (int i = 0; i < CAT_MAX; i++) {
		CHECK(category__parse(category__name(i), &cat) == 0);
		CHECK(cat == (enum category)i);
	}
	CHECK_STR(category__name(CAT_QUEUE), "queue");
	CHECK(category__parse("Decode", &cat) == -EINVAL);
	CHECK(category__parse("", &cat) == -EINVAL);
}

static void test_spec_valid(void)
{
	struct probe_specs specs = { 0 };
	char err[512] = "";

	CHECK(probe_specs__add_spec(&specs, "decode:libavcodec.so.*:avcodec_send_*", err,
				    sizeof(err)) == 0);
	CHECK(specs.cnt == 1);
	if (specs.cnt == 1) {
		CHECK(specs.v[0].cat == CAT_DECODE);
		CHECK_STR(specs.v[0].object, "libavcodec.so.*");
		CHECK_STR(specs.v[0].function, "avcodec_send_*");
		CHECK(specs.v[0].name == NULL);
		CHECK_STR(specs.v[0].origin, "-u 'decode:libavcodec.so.*:avcodec_send_*'");
	}
	CHECK(probe_specs__add_spec(&specs, "io:*:read", err, sizeof(err)) == 0);
	CHECK(specs.cnt == 2);
	if (specs.cnt == 2) {
		CHECK(specs.v[1].cat == CAT_IO);
		CHECK_STR(specs.v[1].object, "*");
		CHECK_STR(specs.v[1].function, "read");
		/* the first one is still intact after the array grew */
		CHECK_STR(specs.v[0].function, "avcodec_send_*");
	}
	probe_specs__free(&specs);
	CHECK(specs.cnt == 0 && specs.v == NULL);
}

/* The parser splits at the first two colons: the function keeps the rest, '::' included. */
static void test_spec_cxx_function(void)
{
	struct probe_specs specs = { 0 };
	char err[512] = "";

	CHECK(probe_specs__add_spec(&specs, "operator:*:ns::Foo::run", err, sizeof(err)) == 0);
	CHECK(specs.cnt == 1);
	if (specs.cnt == 1) {
		CHECK(specs.v[0].cat == CAT_OPERATOR);
		CHECK_STR(specs.v[0].object, "*");
		CHECK_STR(specs.v[0].function, "ns::Foo::run");
	}
	CHECK(probe_specs__add_spec(&specs, "queue:libq.so:a:b", err, sizeof(err)) == 0);
	CHECK(specs.cnt == 2);
	if (specs.cnt == 2) {
		CHECK_STR(specs.v[1].object, "libq.so");
		CHECK_STR(specs.v[1].function, "a:b");
	}
	probe_specs__free(&specs);
}

static void check_bad_spec(const char *text, const char *want_in_err)
{
	struct probe_specs specs = { 0 };
	char err[512] = "";

	CHECK(probe_specs__add_spec(&specs, text, err, sizeof(err)) == -EINVAL);
	CHECK(specs.cnt == 0);
	if (!has(err, want_in_err))
		fprintf(stderr, "  spec '%s': message '%s' lacks '%s'\n", text, err, want_in_err);
	CHECK(has(err, want_in_err));
	probe_specs__free(&specs);
}

static void test_spec_missing_parts(void)
{
	check_bad_spec("decode", "want CATEGORY:OBJECT:FUNCTION");
	check_bad_spec("decode:libx.so", "want CATEGORY:OBJECT:FUNCTION");
	check_bad_spec("decode:libx.so:", "want CATEGORY:OBJECT:FUNCTION");
	check_bad_spec(":libx.so:f", "want CATEGORY:OBJECT:FUNCTION");
	check_bad_spec("", "want CATEGORY:OBJECT:FUNCTION");
	check_bad_spec("decode:libx.so", "'decode:libx.so'");
}

static void test_spec_empty_object(void)
{
	check_bad_spec("decode::avcodec_send_packet", "want CATEGORY:OBJECT:FUNCTION");
}

static void test_spec_unknown_category(void)
{
	check_bad_spec("bogus:libx.so:f", "unknown category 'bogus'");
	check_bad_spec("Decode:libx.so:f", "unknown category 'Decode'");
	/* longer than the parser's buffer: still rejected, still named */
	check_bad_spec("averyveryveryveryverylongcategoryname:o:f",
		       "unknown category 'averyveryveryveryverylongcategoryname'");
}

static const char good_pack[] =
	"{\n"
	"  \"name\": \"demo\",\n"
	"  \"description\": \"a { demo [ \\\" pack\",\n"
	"  \"when\": { \"maps\": [\"libavcodec.so.*\", \"demo\"] },\n"
	"  \"probes\": [\n"
	"    { \"object\": \"libavcodec.so.*\", \"function\": \"avcodec_send_*\", \"category\": "
	"\"decode\" },\n"
	"    {\n"
	"      \"function\": \"queue_pop\",\n"
	"      \"category\": \"queue\",\n"
	"      \"name\": \"Wait on Input Queue\"\n"
	"    }\n"
	"  ]\n"
	"}\n";

static void test_pack_valid(void)
{
	struct probe_specs specs = { 0 };
	struct probe_pack pack;
	char err[512] = "";

	CHECK(probe_pack__parse(good_pack, "demo.json", &pack, &specs, err, sizeof(err)) == 0);
	CHECK_STR(err, "");
	CHECK_STR(pack.name, "demo");
	CHECK_STR(pack.description, "a { demo [ \" pack");
	CHECK_STR(pack.path, "demo.json");
	CHECK(pack.when_cnt == 2);
	if (pack.when_cnt == 2) {
		CHECK_STR(pack.when_maps[0], "libavcodec.so.*");
		CHECK_STR(pack.when_maps[1], "demo");
	}
	CHECK(specs.cnt == 2);
	if (specs.cnt == 2) {
		CHECK(specs.v[0].cat == CAT_DECODE);
		CHECK_STR(specs.v[0].object, "libavcodec.so.*");
		CHECK_STR(specs.v[0].function, "avcodec_send_*");
		CHECK(specs.v[0].name == NULL);
		CHECK_STR(specs.v[0].origin, "demo.json:6");
		CHECK(specs.v[1].cat == CAT_QUEUE);
		CHECK_STR(specs.v[1].object, "*");
		CHECK_STR(specs.v[1].function, "queue_pop");
		CHECK_STR(specs.v[1].name, "Wait on Input Queue");
		CHECK_STR(specs.v[1].origin, "demo.json:7");
	}
	probe_pack__free(&pack);
	CHECK(pack.name == NULL && pack.when_cnt == 0);
	probe_specs__free(&specs);

	/* specs is optional: validation only */
	CHECK(probe_pack__parse(good_pack, "demo.json", &pack, NULL, err, sizeof(err)) == 0);
	CHECK_STR(pack.name, "demo");
	probe_pack__free(&pack);
}

/* Parses text that must fail; the message must start with prefix and contain what. Specs
 * added before stay, none of the pack's are kept. */
static void check_bad_pack(const char *text, const char *prefix, const char *what)
{
	struct probe_specs specs = { 0 };
	struct probe_pack pack;
	char err[512] = "";

	CHECK(probe_specs__add_spec(&specs, "io:*:keep_me", err, sizeof(err)) == 0);
	CHECK(probe_pack__parse(text, "bad.json", &pack, &specs, err, sizeof(err)) == -EINVAL);
	if (!starts(err, prefix) || !has(err, what))
		fprintf(stderr, "  message '%s', want '%s' ... '%s'\n", err, prefix, what);
	CHECK(starts(err, prefix));
	CHECK(has(err, what));
	CHECK(specs.cnt == 1);
	if (specs.cnt == 1)
		CHECK_STR(specs.v[0].function, "keep_me");
	CHECK(pack.name == NULL && pack.when_maps == NULL && pack.path == NULL);
	probe_specs__free(&specs);
}

static void test_pack_bad_json_line(void)
{
	/* the unquoted value is on line 5 */
	check_bad_pack("{\n"
		       "  \"name\": \"p\",\n"
		       "  \"probes\": [\n"
		       "    { \"function\": \"f\", \"category\": \"io\" },\n"
		       "    { \"function\": \"g\", \"category\": io }\n"
		       "  ]\n"
		       "}\n",
		       "bad.json:5:", "not valid JSON");
	/* a missing comma: the error is where the next key starts, line 3 */
	check_bad_pack("{\n"
		       "  \"name\": \"p\"\n"
		       "  \"probes\": []\n"
		       "}\n",
		       "bad.json:3:", "not valid JSON");
	check_bad_pack("", "bad.json:1:", "not valid JSON");
	/* trailing garbage after the object, on line 2 */
	check_bad_pack("{\"name\": \"p\", \"probes\": [{\"function\": \"f\", \"category\": \"io\"}]}\n"
		       "x\n",
		       "bad.json:2:", "not valid JSON");
}

static void test_pack_unknown_category_line(void)
{
	/* the third probe's '{' is on line 9; braces in strings must not confuse the count */
	check_bad_pack("{\n"
		       "  \"name\": \"p\",\n"
		       "  \"description\": \"{ [ \\\" {\",\n"
		       "  \"probes\": [\n"
		       "    { \"function\": \"a\", \"category\": \"io\" },\n"
		       "    {\n"
		       "      \"function\": \"b{\", \"category\": \"decode\"\n"
		       "    },\n"
		       "    { \"function\": \"c\",\n"
		       "      \"category\": \"bogus\" }\n"
		       "  ]\n"
		       "}\n",
		       "bad.json:9: ", "unknown category \"bogus\"");
}

static void test_pack_unknown_field(void)
{
	check_bad_pack("{\n"
		       "  \"name\": \"p\",\n"
		       "  \"probes\": [\n"
		       "    { \"function\": \"a\", \"category\": \"io\", \"colour\": \"red\" }\n"
		       "  ]\n"
		       "}\n",
		       "bad.json:4: ", "unknown field \"colour\"");
}

/* name_from: a string argument, or one reached through struct fields from the libraries' own
 * headers (tools/struct_fields.c); a field tracer does not know, or too long a chain, is refused
 * with the line and the fields it knows. */
static void test_pack_name_from(void)
{
	static const char chain[] =
		"{ \"name\": \"g\", \"probes\": [ { \"function\": \"gst_pad_push\", "
		"\"category\": \"operator\", \"name_from\": "
		"\"arg1->GstPad.peer->GstObject.parent->GstObject.name:str\" } ] }";
	struct probe_specs specs = { 0 };
	struct probe_pack pack;
	char err[512] = "";

	CHECK(probe_pack__parse(chain, "g.json", &pack, &specs, err, sizeof(err)) == 0);
	if (specs.cnt == 1) {
		const struct probe_spec *s = &specs.v[0];

		CHECK(s->name_arg == 1 && s->name_nderef == 3);
		CHECK(s->name_deref[0] == (unsigned)struct_field__offset("GstPad.peer", 11));
		CHECK(s->name_deref[1] == (unsigned)struct_field__offset("GstObject.parent", 16));
		CHECK(s->name_deref[2] == (unsigned)struct_field__offset("GstObject.name", 14));
		/* from GStreamer's headers: a GstPad starts with its GstObject, which starts
		 * with a GInitiallyUnowned (24 bytes on x86-64) */
		CHECK(s->name_deref[2] > 16 && s->name_deref[2] < s->name_deref[0]);
	} else {
		CHECK(specs.cnt == 1);
	}
	probe_pack__free(&pack);
	probe_specs__free(&specs);
	check_bad_pack("{ \"name\": \"p\", \"probes\": [\n"
		       "  { \"function\": \"a\", \"category\": \"io\", "
		       "\"name_from\": \"arg0->GstPad.colour:str\" } ] }\n",
		       "bad.json:2: ", "no field \"GstPad.colour\" (tracer knows: GstObject.name");
	check_bad_pack("{ \"name\": \"p\", \"probes\": [\n"
		       "  { \"function\": \"a\", \"category\": \"io\", \"name_from\": "
		       "\"arg0->GstPad.peer->GstPad.peer->GstPad.peer->GstPad.peer->GstPad.peer:str\""
		       " } ] }\n",
		       "bad.json:2: ", "follows at most 4 pointers");
	check_bad_pack("{ \"name\": \"p\", \"probes\": [\n"
		       "  { \"function\": \"a\", \"category\": \"io\", "
		       "\"name_from\": \"arg0->GstObject.name\" } ] }\n",
		       "bad.json:2: ", "\"argN->Type.field->...:str\"");
	check_bad_pack("{ \"name\": \"p\", \"probes\": [\n"
		       "  { \"function\": \"a\", \"category\": \"io\", "
		       "\"name_from\": \"arg6:str\" } ] }\n",
		       "bad.json:2: ", "(N from 0 to 5)");
	/* category_by_name: globs over the names read, only with name_from */
	check_bad_pack("{ \"name\": \"p\", \"probes\": [\n"
		       "  { \"function\": \"a\", \"category\": \"io\", "
		       "\"category_by_name\": {\"queue*\": \"queue\"} } ] }\n",
		       "bad.json:2: ", "with \"name_from\"");
	check_bad_pack("{ \"name\": \"p\", \"probes\": [\n"
		       "  { \"function\": \"a\", \"category\": \"io\", \"name_from\": \"arg0:str\", "
		       "\"category_by_name\": {\"queue*\": \"waiting\"} } ] }\n",
		       "bad.json:2: ", "category_by_name.queue*: want a category");
	{
		static const char q[] =
			"{ \"name\": \"g\", \"probes\": [ { \"function\": \"push\", "
			"\"category\": \"operator\", \"name_from\": \"arg0:str\", "
			"\"category_by_name\": {\"queue*\": \"queue\", \"*dec[0-9]*\": "
			"\"decode\"} } ] }";
		struct probe_specs qs = { 0 };
		struct probe_pack qp;

		CHECK(probe_pack__parse(q, "q.json", &qp, &qs, err, sizeof(err)) == 0);
		if (qs.cnt == 1) {
			CHECK(probe_spec__category_of(&qs.v[0], "queue0") == CAT_QUEUE);
			CHECK(probe_spec__category_of(&qs.v[0], "vp8dec0") == CAT_DECODE);
			CHECK(probe_spec__category_of(&qs.v[0], "videoconvert0") == CAT_OPERATOR);
		}
		CHECK(qs.cnt == 1);
		probe_pack__free(&qp);
		probe_specs__free(&qs);
	}
	/* exclude: a non-empty list of globs */
	check_bad_pack("{ \"name\": \"p\", \"probes\": [\n"
		       "  { \"function\": \"a*\", \"category\": \"io\", \"exclude\": \"ab\" } ] }\n",
		       "bad.json:2: ", "\"exclude\" is [\"GLOB\", ...]");
	check_bad_pack("{ \"name\": \"p\", \"probes\": [\n"
		       "  { \"function\": \"a*\", \"category\": \"io\", \"exclude\": [] } ] }\n",
		       "bad.json:2: ", "\"exclude\" is [\"GLOB\", ...]");
	check_bad_pack("{ \"name\": \"p\", \"probes\": [\n"
		       "  { \"function\": \"a*\", \"category\": \"io\", \"exclude\": [\"ab\", 3] } ] }\n",
		       "bad.json:2: ", "\"exclude\" holds non-empty strings");
	{
		static const char x[] =
			"{ \"name\": \"t\", \"probes\": [ { \"function\": \"at::_ops::*::call\", "
			"\"category\": \"operator\", \"exclude\": [\"at::_ops::view::call\", "
			"\"at::_ops::empty_*::call\"] } ] }";
		struct probe_specs xs = { 0 };
		struct probe_pack xp;

		CHECK(probe_pack__parse(x, "x.json", &xp, &xs, err, sizeof(err)) == 0);
		CHECK(xs.cnt == 1);
		if (xs.cnt == 1) {
			CHECK(xs.v[0].nexclude == 2);
			CHECK(!strcmp(xs.v[0].exclude[1], "at::_ops::empty_*::call"));
		}
		probe_pack__free(&xp);
		probe_specs__free(&xs);
	}
}

static void test_pack_missing_function(void)
{
	check_bad_pack("{\n"
		       "  \"name\": \"p\",\n"
		       "  \"probes\": [\n"
		       "    { \"function\": \"a\", \"category\": \"io\" },\n"
		       "    { \"object\": \"x\", \"category\": \"io\" }\n"
		       "  ]\n"
		       "}\n",
		       "bad.json:5: ", "needs \"function\"");
	check_bad_pack("{\"name\": \"p\", \"probes\": [{\"function\": \"a\"}]}",
		       "bad.json:1: ", "needs \"category\"");
	check_bad_pack("{\"name\": \"p\", \"probes\": [{\"function\": \"\", \"category\": \"io\"}]}",
		       "bad.json:1: ", "non-empty strings");
	check_bad_pack("{\"name\": \"p\", \"probes\": [{\"function\": 3, \"category\": \"io\"}]}",
		       "bad.json:1: ", "non-empty strings");
}

static void test_pack_empty_probes(void)
{
	check_bad_pack("{\"name\": \"p\", \"probes\": []}", "bad.json:1:", "non-empty \"probes\"");
	check_bad_pack("{\"name\": \"p\"}", "bad.json:1:", "non-empty \"probes\"");
	check_bad_pack("{\"name\": \"p\", \"probes\": {}}", "bad.json:1:", "non-empty \"probes\"");
}

static void test_pack_not_object(void)
{
	check_bad_pack("[1, 2]", "bad.json:1:", "a probe pack is a JSON object");
	check_bad_pack("\"pack\"", "bad.json:1:", "a probe pack is a JSON object");
	check_bad_pack("{\"probes\": [{\"function\": \"a\", \"category\": \"io\"}]}", "bad.json:1:",
		       "needs a \"name\"");
	check_bad_pack("{\"name\": \"p\", \"when\": [\"x\"], \"probes\": [{\"function\": \"a\", "
		       "\"category\": \"io\"}]}",
		       "bad.json:1:", "\"when\"");
	check_bad_pack("{\"name\": \"p\", \"when\": {\"maps\": [1]}, \"probes\": [{\"function\": "
		       "\"a\", \"category\": \"io\"}]}",
		       "bad.json:1:", "when.maps");
	check_bad_pack("{\"name\": \"p\", \"probes\": [\"f\"]}", "bad.json:", "must be an object");
}

static void test_pack_load_missing_file(void)
{
	struct probe_pack pack;
	char err[512] = "";

	CHECK(probe_pack__load("/nonexistent/x.json", &pack, NULL, err, sizeof(err)) == -ENOENT);
	CHECK(has(err, "/nonexistent/x.json"));
}

/* Every pack shipped in probes/ loads cleanly and yields probes. */
static void test_real_packs(void)
{
	glob_t g;
	int n = 0;

	CHECK(glob("probes/*.json", 0, NULL, &g) == 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct probe_specs specs = { 0 };
		struct probe_pack pack;
		char err[512] = "";
		int ret = probe_pack__load(g.gl_pathv[i], &pack, &specs, err, sizeof(err));

		if (ret)
			fprintf(stderr, "  %s: %s\n", g.gl_pathv[i], err);
		CHECK(ret == 0);
		if (!ret) {
			CHECK(pack.name && pack.name[0]);
			CHECK(specs.cnt > 0);
			for (size_t j = 0; j < specs.cnt; j++) {
				CHECK(specs.v[j].object && specs.v[j].object[0]);
				CHECK(specs.v[j].function && specs.v[j].function[0]);
				CHECK(starts(specs.v[j].origin, g.gl_pathv[i]));
			}
			probe_pack__free(&pack);
		}
		probe_specs__free(&specs);
		n++;
	}
	CHECK(n > 0);
	globfree(&g);
}

static void test_pipeline_pack_lines(void)
{
	struct probe_specs specs = { 0 };
	struct probe_pack pack;
	char err[512] = "";

	CHECK(probe_pack__load("probes/pipeline.json", &pack, &specs, err, sizeof(err)) == 0);
	CHECK(specs.cnt == 7);
	if (specs.cnt == 7) {
		CHECK_STR(specs.v[0].origin, "probes/pipeline.json:6");
		CHECK_STR(specs.v[6].origin, "probes/pipeline.json:14");
		CHECK_STR(specs.v[5].name, "Wait on Input Queue");
		CHECK(specs.v[5].cat == CAT_QUEUE);
	}
	probe_pack__free(&pack);
	probe_specs__free(&specs);
}

/* Object names as bpftrace users write them: without the .so and its version. */
static void test_object_matches(void)
{
	CHECK(probe_spec__object_matches("libavcodec.so.*", "libavcodec.so.59.37.100"));
	CHECK(probe_spec__object_matches("libavcodec", "libavcodec.so.59.37.100"));
	CHECK(probe_spec__object_matches("libavcodec", "libavcodec.so"));
	CHECK(probe_spec__object_matches("libgstvideo", "libgstvideo-1.0.so.0"));
	CHECK(probe_spec__object_matches("pipeline", "pipeline"));
	CHECK(probe_spec__object_matches("*", "anything.so.1"));
	/* a prefix is not a name: libavcodec is not libavcodec_extra, nor libav */
	CHECK(!probe_spec__object_matches("libav", "libavcodec.so.59"));
	CHECK(!probe_spec__object_matches("libavcodec", "libavcodec_extra.so.59"));
	/* a glob that names a .so is taken as written */
	CHECK(!probe_spec__object_matches("libavcodec.so.58", "libavcodec.so.59"));
	CHECK(!probe_spec__object_matches("python3", "python3.11"));
}

/* A pack of 10,000 probes, one a line with a nested one among them: each spec says its line
 * (found in one scan of the text; one scan per probe took minutes). */
static void test_big_pack_lines(void)
{
	enum { N = 10000 };
	size_t cap = 64 * N + 256, len;
	char *text = malloc(cap), err[512] = "";
	struct probe_specs specs = { 0 };
	struct probe_pack pack;

	len = snprintf(text, cap, "{\"name\": \"big\", \"probes\": [\n");
	for (int i = 0; i < N; i++)
		len += snprintf(text + len, cap - len,
				i == 5 ? "{\"function\": \"f_%d\", \"args\":\n{\"n\": \"arg0\"},\n"
					 "\"category\": \"other\"}%s\n" :
					 "{\"function\": \"f_%d\", \"category\": \"other\"}%s\n",
				i, i + 1 < N ? "," : "");
	snprintf(text + len, cap - len, "]}\n");
	CHECK(probe_pack__parse(text, "big.json", &pack, &specs, err, sizeof(err)) == 0);
	CHECK_STR(err, "");
	CHECK(specs.cnt == N);
	if (specs.cnt == N) {
		CHECK_STR(specs.v[0].origin, "big.json:2");
		CHECK_STR(specs.v[5].origin, "big.json:7");
		CHECK_STR(specs.v[6].origin, "big.json:10"); /* past the probe of three lines */
		CHECK_STR(specs.v[N - 1].origin, "big.json:10003");
	}
	probe_pack__free(&pack);
	probe_specs__free(&specs);
	free(text);
}

int main(int argc, char **argv)
{
	RUN(test_category_names);
	RUN(test_spec_valid);
	RUN(test_spec_cxx_function);
	RUN(test_spec_missing_parts);
	RUN(test_spec_empty_object);
	RUN(test_spec_unknown_category);
	RUN(test_pack_valid);
	RUN(test_pack_bad_json_line);
	RUN(test_pack_unknown_category_line);
	RUN(test_pack_unknown_field);
	RUN(test_pack_name_from);
	RUN(test_pack_missing_function);
	RUN(test_pack_empty_probes);
	RUN(test_pack_not_object);
	RUN(test_pack_load_missing_file);
	RUN(test_real_packs);
	RUN(test_pipeline_pack_lines);
	RUN(test_big_pack_lines);
	RUN(test_object_matches);
	UNIT_EXIT();
}
