// SPDX-License-Identifier: MIT
#include "probe/probe_spec.h"
#include "probe/struct_fields.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const category_names[CAT_MAX] = {
	[CAT_DECODE] = "decode", [CAT_OPERATOR] = "operator", [CAT_QUEUE] = "queue",
	[CAT_IO] = "io",	 [CAT_OTHER] = "other",	   [CAT_GIL] = "gil",
	[CAT_PYTHON] = "python", [CAT_ENCODE] = "encode",
};

const char *category__name(enum category cat)
{
	return cat < CAT_MAX ? category_names[cat] : "other";
}

int category__parse(const char *s, enum category *cat)
{
	for (int i = 0; i < CAT_MAX; i++) {
		if (!strcmp(s, category_names[i])) {
			*cat = i;
			return 0;
		}
	}
	return -EINVAL;
}

static void spec__free(struct probe_spec *s)
{
	for (int i = 0; i < s->nargs; i++)
		free(s->args[i].key);
	free(s->object);
	free(s->function);
	free(s->name);
	free(s->origin);
	free(s->usdt_provider);
	free(s->usdt_name);
	free(s->usdt_end);
	for (int i = 0; i < s->nby_name; i++)
		free(s->by_name[i].glob);
	free(s->by_name);
	for (int i = 0; i < s->nexclude; i++)
		free(s->exclude[i]);
	free(s->exclude);
}

enum category probe_spec__category_of(const struct probe_spec *s, const char *name)
{
	for (int i = 0; i < s->nby_name; i++)
		if (!fnmatch(s->by_name[i].glob, name, 0))
			return s->by_name[i].cat;
	return s->cat;
}

/* "category_by_name": {"GLOB": "CATEGORY", ...}, with name_from. */
static int parse_by_name(const cJSON *o, struct probe_spec *s, const char *where, char *err,
			 size_t errlen)
{
	const cJSON *g;

	if (!cJSON_IsObject(o) || s->name_arg < 0) {
		snprintf(err, errlen, "%s: \"category_by_name\" is {\"GLOB\": \"CATEGORY\", ...}, "
				      "with \"name_from\"", where);
		return -EINVAL;
	}
	cJSON_ArrayForEach(g, o) {
		enum category cat;

		if (!cJSON_IsString(g) || category__parse(g->valuestring, &cat) || !g->string[0]) {
			snprintf(err, errlen, "%s: category_by_name.%.40s: want a category: decode, "
					      "operator, queue, io, other or gil", where, g->string);
			return -EINVAL;
		}
		s->by_name = xrealloc(s->by_name, s->nby_name + 1, sizeof(*s->by_name));
		s->by_name[s->nby_name].glob = xstrdup(g->string);
		s->by_name[s->nby_name++].cat = cat;
	}
	return 0;
}

/* "exclude": ["GLOB", ...], functions the probe's glob matches that it leaves out. */
static int parse_exclude(const cJSON *a, struct probe_spec *s, const char *where, char *err,
			 size_t errlen)
{
	const cJSON *g;

	if (!cJSON_IsArray(a) || !cJSON_GetArraySize(a)) {
		snprintf(err, errlen, "%s: \"exclude\" is [\"GLOB\", ...], functions to leave out",
			 where);
		return -EINVAL;
	}
	cJSON_ArrayForEach(g, a) {
		if (!cJSON_IsString(g) || !g->valuestring[0]) {
			snprintf(err, errlen, "%s: \"exclude\" holds non-empty strings (globs over "
					      "function names)", where);
			return -EINVAL;
		}
		s->exclude = xrealloc(s->exclude, s->nexclude + 1, sizeof(*s->exclude));
		s->exclude[s->nexclude++] = xstrdup(g->valuestring);
	}
	return 0;
}

bool probe_spec__object_matches(const char *glob, const char *base)
{
	char versioned[512];

	if (!fnmatch(glob, base, 0))
		return true;
	if (strstr(glob, ".so") || strlen(glob) > sizeof(versioned) - 8)
		return false;
	snprintf(versioned, sizeof(versioned), "%s.so*", glob);
	if (!fnmatch(versioned, base, 0))
		return true;
	snprintf(versioned, sizeof(versioned), "%s-*.so*", glob);
	return !fnmatch(versioned, base, 0);
}

int usdt_spec__parse(struct probe_spec *s, const char *text)
{
	const char *colon = strchr(text, ':'), *dots;

	if (!colon || colon == text || !colon[1] || strchr(colon + 1, ':'))
		return -EINVAL;
	dots = strstr(colon + 1, "..");
	if (dots && (dots == colon + 1 || !dots[2]))
		return -EINVAL;
	s->usdt_provider = strndup(text, colon - text);
	s->usdt_name = dots ? strndup(colon + 1, dots - colon - 1) : xstrdup(colon + 1);
	s->usdt_end = dots ? xstrdup(dots + 2) : NULL;
	if (!s->usdt_provider || !s->usdt_name)
		abort();
	return 0;
}

static struct probe_spec *specs__push(struct probe_specs *specs)
{
	specs->v = xrealloc(specs->v, specs->cnt + 1, sizeof(*specs->v));
	memset(&specs->v[specs->cnt], 0, sizeof(specs->v[0]));
	specs->v[specs->cnt].name_arg = -1;
	specs->v[specs->cnt].queue_arg = -1;
	return &specs->v[specs->cnt++];
}

int probe_specs__add_spec(struct probe_specs *specs, const char *text, char *err, size_t errlen)
{
	const char *c1 = strchr(text, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	char cat_s[32];
	enum category cat;
	struct probe_spec *s;

	if (!c1 || !c2 || c1 == text || c2 == c1 + 1 || !c2[1]) {
		snprintf(err, errlen,
			 "bad probe spec '%s': want CATEGORY:OBJECT:FUNCTION, e.g. "
			 "'decode:libavcodec.so.*:avcodec_send_packet'",
			 text);
		return -EINVAL;
	}
	if ((size_t)(c1 - text) >= sizeof(cat_s) ||
	    (snprintf(cat_s, sizeof(cat_s), "%.*s", (int)(c1 - text), text),
	     category__parse(cat_s, &cat))) {
		snprintf(err, errlen,
			 "bad probe spec '%s': unknown category '%.*s' (one of decode, operator, "
			 "queue, io, other)",
			 text, (int)(c1 - text), text);
		return -EINVAL;
	}
	s = specs__push(specs);
	s->cat = cat;
	s->object = strndup(c1 + 1, c2 - c1 - 1);
	s->function = xstrdup(c2 + 1);
	if (asprintf(&s->origin, "-u '%s'", text) < 0 || !s->object)
		abort();
	if (!strncmp(s->function, "usdt:", 5) && usdt_spec__parse(s, s->function + 5)) {
		snprintf(err, errlen,
			 "bad probe spec '%s': a USDT probe is usdt:PROVIDER:NAME or "
			 "usdt:PROVIDER:START..END, e.g. 'other:python3*:usdt:python:gc__start..gc__done'",
			 text);
		spec__free(s);
		specs->cnt--;
		return -EINVAL;
	}
	return 0;
}

/* cJSON keeps no line numbers: find the line of each of the n first elements of the top-level
 * "probes" array in one scan of the text, aware of strings and nesting (one scan per element
 * took minutes on a pack of 10,000 probes). Elements not found get the last line. */
static void probe_lines(const char *text, int *lines, int n)
{
	int line = 1, depth = 0, in_probes = 0, idx = -1;
	const char *key_start = NULL;

	for (const char *p = text; *p && idx + 1 < n; p++) {
		switch (*p) {
		case '\n':
			line++;
			break;
		case '"':
			key_start = p + 1;
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1])
					p++;
				else if (*p == '\n')
					line++;
			}
			if (!*p)
				goto out;
			if (depth == 1 && p - key_start == 6 && !strncmp(key_start, "probes", 6))
				in_probes = 1;
			break;
		case '{':
		case '[':
			depth++;
			if (in_probes == 2 && depth == 3)
				lines[++idx] = line;
			if (in_probes == 1 && *p == '[' && depth == 2)
				in_probes = 2;
			break;
		case '}':
		case ']':
			depth--;
			if (in_probes == 2 && depth == 1)
				in_probes = 0;
			break;
		}
	}
out:
	while (++idx < n)
		lines[idx] = line;
}

static int line_at(const char *text, const char *pos)
{
	int line = 1;

	for (const char *p = text; *p && p < pos; p++)
		line += *p == '\n';
	return line;
}

static const char *str_field(const cJSON *obj, const char *key, bool *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!v)
		return NULL;
	if (!cJSON_IsString(v) || !v->valuestring[0]) {
		*bad = true;
		return NULL;
	}
	return v->valuestring;
}

/* "arg0".."arg5" (or "ret" when allowed), with an optional ":type" suffix. Returns the index,
 * ARG_RET, or -2 when malformed; *type points at the suffix or NULL. */
static int parse_arg_ref(const char *s, bool allow_ret, const char **type)
{
	*type = strchr(s, ':');
	if (allow_ret && !strncmp(s, "ret", 3) && (s[3] == 0 || s[3] == ':'))
		return ARG_RET;
	if (strncmp(s, "arg", 3) || s[3] < '0' || s[3] > '5' || (s[4] != 0 && s[4] != ':'))
		return -2;
	return s[3] - '0';
}

/* "argN:str", or "argN->Type.field->...:str": the string at the end of pointers read at those
 * fields' offsets, one after another (the offsets come from the libraries' headers). */
static int parse_name_from(const char *text, struct probe_spec *s, const char *where, char *err,
			   size_t errlen)
{
	const char *p = text + 4, *type;

	s->name_arg = strncmp(text, "arg", 3) || text[3] < '0' || text[3] > '5' ? -1 : text[3] - '0';
	s->name_nderef = 0;
	while (s->name_arg >= 0 && !strncmp(p, "->", 2)) {
		size_t len = strcspn(p + 2, "-:");
		long off = struct_field__offset(p + 2, len);

		if (off < 0 || off > 0xffff) {
			snprintf(err, errlen, "%s: \"name_from\": no field \"%.*s\" (tracer knows: %s)",
				 where, (int)(len > 64 ? 64 : len), p + 2, struct_field__known());
			return -EINVAL;
		}
		if (s->name_nderef == SPEC_MAX_NAME_DEREFS) {
			snprintf(err, errlen, "%s: \"name_from\" follows at most %d pointers", where,
				 SPEC_MAX_NAME_DEREFS);
			return -EINVAL;
		}
		s->name_deref[s->name_nderef++] = (unsigned)off;
		p += 2 + len;
	}
	type = p;
	if (s->name_arg < 0 || strcmp(type, ":str")) {
		snprintf(err, errlen, "%s: \"name_from\" is \"argN:str\" or "
				      "\"argN->Type.field->...:str\" (N from 0 to 5)", where);
		s->name_arg = -1;
		return -EINVAL;
	}
	return 0;
}

static int parse_args(const cJSON *args, struct probe_spec *s, const char *where, char *err,
		      size_t errlen)
{
	const cJSON *a;

	if (!cJSON_IsObject(args)) {
		snprintf(err, errlen, "%s: \"args\" is {\"KEY\": \"argN\" | \"argN:hex\" | \"ret\"}",
			 where);
		return -EINVAL;
	}
	cJSON_ArrayForEach(a, args) {
		const char *type;
		int idx, nret = 0;
		size_t kl = strspn(a->string, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					       "0123456789_");

		if (!kl || kl > 32 || a->string[kl]) {
			snprintf(err, errlen, "%s: args key \"%.40s\": want 1 to 32 letters, digits or _",
				 where, a->string);
			return -EINVAL;
		}
		for (int i = 0; i < s->nargs; i++)
			nret += s->args[i].idx == ARG_RET;
		idx = cJSON_IsString(a) ? parse_arg_ref(a->valuestring, true, &type) : -2;
		if (idx == -2 || (type && strcmp(type, ":hex") && strcmp(type, ":int"))) {
			snprintf(err, errlen, "%s: args.%s: want \"arg0\"..\"arg5\" or \"ret\", "
					      "optionally with :int or :hex", where, a->string);
			return -EINVAL;
		}
		if ((idx == ARG_RET && nret) ||
		    (idx != ARG_RET && s->nargs - nret >= SPEC_MAX_ARGS)) {
			snprintf(err, errlen, "%s: at most %d arguments and the return value", where,
				 SPEC_MAX_ARGS);
			return -EINVAL;
		}
		s->args[s->nargs].key = xstrdup(a->string);
		s->args[s->nargs].idx = idx;
		s->args[s->nargs].hex = type && !strcmp(type, ":hex");
		s->nargs++;
	}
	return 0;
}

static int parse_queue(const cJSON *q, struct probe_spec *s, const char *where, char *err,
		       size_t errlen)
{
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(q, "role");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(q, "id");
	const char *type;

	if (!cJSON_IsObject(q) || !cJSON_IsString(role) || !cJSON_IsString(id) ||
	    (strcmp(role->valuestring, "push") && strcmp(role->valuestring, "pop")) ||
	    (s->queue_arg = parse_arg_ref(id->valuestring, false, &type)) < 0 || type) {
		snprintf(err, errlen, "%s: \"queue\" is {\"role\": \"push\" | \"pop\", \"id\": "
				      "\"argN\"}", where);
		return -EINVAL;
	}
	s->queue_role = strcmp(role->valuestring, "push") ? QUEUE_POP : QUEUE_PUSH;
	return 0;
}

/* Every field of a probe is one tracer knows: a typo is an error, not a silent default. */
static int check_fields(const cJSON *p, const char *where, char *err, size_t errlen)
{
	static const char *const known[] = { "object", "function", "category", "name",
					     "name_from", "args", "entry_only", "queue", "python_wait", "category_by_name",
					     "usdt", "usdt_end", "exclude" };
	const cJSON *f;

	if (!cJSON_IsObject(p)) {
		snprintf(err, errlen, "%s: a probe must be an object", where);
		return -EINVAL;
	}
	cJSON_ArrayForEach(f, p) {
		bool ok = false;

		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			ok |= !strcmp(f->string, known[i]);
		if (!ok) {
			snprintf(err, errlen,
				 "%s: unknown field \"%s\" (known: object, function, category, name, "
				 "name_from, args, entry_only, queue, python_wait, category_by_name, usdt, usdt_end, "
				 "exclude)",
				 where, f->string);
			return -EINVAL;
		}
	}
	return 0;
}

/* "usdt": "PROVIDER:NAME" and, for a span, "usdt_end": "NAME" of the same provider. */
static int parse_usdt_pair(struct probe_spec *spec, const char *usdt, const char *usdt_end,
			   const char *where, char *err, size_t errlen)
{
	char *text = NULL;
	int ret = 0;

	if (asprintf(&text, "%s%s%s", usdt, usdt_end ? ".." : "", usdt_end ? usdt_end : "") < 0)
		abort();
	if (usdt_spec__parse(spec, text) || (usdt_end && strchr(usdt_end, ':'))) {
		snprintf(err, errlen, "%s: \"usdt\" is \"PROVIDER:NAME\" and \"usdt_end\" "
				      "a NAME of the same provider", where);
		ret = -EINVAL;
	}
	free(text);
	return ret;
}

static int parse_probe(const cJSON *p, const char *where, struct probe_specs *specs, char *err,
		       size_t errlen)
{
	const char *object, *function, *category, *name, *name_from, *usdt, *usdt_end;
	const cJSON *entry_only;
	struct probe_spec tmp, *s;
	enum category cat;
	bool bad = false;
	int ret;

	if (check_fields(p, where, err, errlen))
		return -EINVAL;
	object = str_field(p, "object", &bad);
	function = str_field(p, "function", &bad);
	category = str_field(p, "category", &bad);
	name = str_field(p, "name", &bad);
	name_from = str_field(p, "name_from", &bad);
	usdt = str_field(p, "usdt", &bad);
	usdt_end = str_field(p, "usdt_end", &bad);
	if (bad) {
		snprintf(err, errlen, "%s: object, function, category, name, name_from, usdt and "
				      "usdt_end must be non-empty strings", where);
		return -EINVAL;
	}
	if (usdt && function) {
		snprintf(err, errlen, "%s: a probe has \"function\" or \"usdt\", not both", where);
		return -EINVAL;
	}
	if (usdt_end && !usdt) {
		snprintf(err, errlen, "%s: \"usdt_end\" needs \"usdt\"", where);
		return -EINVAL;
	}
	if (usdt)
		function = usdt;
	if (!function || !category) {
		snprintf(err, errlen, "%s: a probe needs \"%s\"", where,
			 !function ? "function" : "category");
		return -EINVAL;
	}
	if (category__parse(category, &cat)) {
		snprintf(err, errlen,
			 "%s: unknown category \"%s\" (one of decode, operator, queue, io, other)",
			 where, category);
		return -EINVAL;
	}
	entry_only = cJSON_GetObjectItemCaseSensitive(p, "entry_only");
	if (entry_only && !cJSON_IsBool(entry_only)) {
		snprintf(err, errlen, "%s: \"entry_only\" is true or false", where);
		return -EINVAL;
	}
	memset(&tmp, 0, sizeof(tmp));
	tmp.name_arg = tmp.queue_arg = -1;
	if (name_from && parse_name_from(name_from, &tmp, where, err, errlen))
		return -EINVAL;
	ret = 0;
	if (cJSON_GetObjectItemCaseSensitive(p, "args"))
		ret = parse_args(cJSON_GetObjectItemCaseSensitive(p, "args"), &tmp, where, err,
				 errlen);
	if (!ret && cJSON_GetObjectItemCaseSensitive(p, "queue"))
		ret = parse_queue(cJSON_GetObjectItemCaseSensitive(p, "queue"), &tmp, where, err,
				  errlen);
	tmp.entry_only = cJSON_IsTrue(entry_only);
	if (!ret && cJSON_GetObjectItemCaseSensitive(p, "category_by_name"))
		ret = parse_by_name(cJSON_GetObjectItemCaseSensitive(p, "category_by_name"), &tmp,
				    where, err, errlen);
	if (!ret && cJSON_GetObjectItemCaseSensitive(p, "exclude"))
		ret = parse_exclude(cJSON_GetObjectItemCaseSensitive(p, "exclude"), &tmp, where, err,
				    errlen);
	if (!ret && cJSON_GetObjectItemCaseSensitive(p, "python_wait")) {
		const cJSON *pw = cJSON_GetObjectItemCaseSensitive(p, "python_wait");

		if (!cJSON_IsBool(pw)) {
			snprintf(err, errlen, "%s: \"python_wait\" is true or false", where);
			ret = -EINVAL;
		}
		tmp.python_wait = cJSON_IsTrue(pw);
	}
	if (!ret && usdt)
		ret = parse_usdt_pair(&tmp, usdt, usdt_end, where, err, errlen);
	for (int i = 0; !ret && tmp.entry_only && i < tmp.nargs; i++) {
		if (tmp.args[i].idx == ARG_RET) {
			snprintf(err, errlen, "%s: an entry_only probe has no return value", where);
			ret = -EINVAL;
		}
	}
	if (ret || !specs) {
		spec__free(&tmp);
		return ret;
	}
	s = specs__push(specs);
	*s = tmp;
	s->cat = cat;
	s->object = xstrdup(object ? object : "*");
	s->function = xstrdup(function);
	s->name = name ? xstrdup(name) : NULL;
	s->origin = xstrdup(where);
	s->optional = true;
	return 0;
}

/* How many arrays and objects are open at end: cJSON gives up past CJSON_NESTING_LIMIT. */
static int depth_at(const char *text, const char *end)
{
	bool in_str = false, esc = false;
	int depth = 0;

	for (const char *p = text; p < end && *p; p++) {
		if (in_str) {
			esc = !esc && *p == '\\';
			in_str = esc || *p != '"';
		} else if (*p == '"') {
			in_str = true;
		} else if (*p == '[' || *p == '{') {
			depth++;
		} else if (*p == ']' || *p == '}') {
			depth--;
		}
	}
	return depth;
}

int probe_pack__parse(const char *text, const char *path, struct probe_pack *pack,
		      struct probe_specs *specs, char *err, size_t errlen)
{
	const cJSON *probes, *when, *maps, *p, *m;
	const char *end = NULL;
	size_t first = specs ? specs->cnt : 0;
	cJSON *root;
	bool bad = false;
	char where[PATH_MAX + 32];
	int i = 0, err_code = -EINVAL, *lines = NULL;

	memset(pack, 0, sizeof(*pack));
	root = cJSON_ParseWithOpts(text, &end, true);
	if (!root) {
		end = end ? end : text;
		if (depth_at(text, end) >= CJSON_NESTING_LIMIT)
			snprintf(err, errlen, "%s:%d: nested deeper than %d levels: flatten it", path,
				 line_at(text, end), CJSON_NESTING_LIMIT);
		else
			snprintf(err, errlen, "%s:%d: not valid JSON", path, line_at(text, end));
		return -EINVAL;
	}
	if (!cJSON_IsObject(root)) {
		snprintf(err, errlen, "%s:1: a probe pack is a JSON object", path);
		goto out;
	}
	pack->path = xstrdup(path);
	if (str_field(root, "name", &bad))
		pack->name = xstrdup(str_field(root, "name", &bad));
	if (str_field(root, "description", &bad))
		pack->description = xstrdup(str_field(root, "description", &bad));
	if (bad || !pack->name) {
		snprintf(err, errlen, "%s:1: a pack needs a \"name\" string", path);
		goto out;
	}
	when = cJSON_GetObjectItemCaseSensitive(root, "when");
	maps = when ? cJSON_GetObjectItemCaseSensitive(when, "maps") : NULL;
	if (when && (!cJSON_IsObject(when) || (maps && !cJSON_IsArray(maps)))) {
		snprintf(err, errlen, "%s:1: \"when\" is {\"maps\": [\"GLOB\", ...]}", path);
		goto out;
	}
	cJSON_ArrayForEach(m, maps) {
		if (!cJSON_IsString(m)) {
			snprintf(err, errlen, "%s:1: \"when.maps\" holds strings", path);
			goto out;
		}
		pack->when_maps = xrealloc(pack->when_maps, pack->when_cnt + 1, sizeof(char *));
		pack->when_maps[pack->when_cnt++] = xstrdup(m->valuestring);
	}
	probes = cJSON_GetObjectItemCaseSensitive(root, "probes");
	if (!cJSON_IsArray(probes) || !cJSON_GetArraySize(probes)) {
		snprintf(err, errlen, "%s:1: a pack needs a non-empty \"probes\" array", path);
		goto out;
	}
	lines = xcalloc(cJSON_GetArraySize(probes), sizeof(*lines));
	probe_lines(text, lines, cJSON_GetArraySize(probes));
	cJSON_ArrayForEach(p, probes) {
		snprintf(where, sizeof(where), "%s:%d", path, lines[i++]);
		if (parse_probe(p, where, specs, err, errlen))
			goto out;
	}
	err_code = 0;
out:
	free(lines);
	cJSON_Delete(root);
	if (err_code) {
		probe_pack__free(pack);
		while (specs && specs->cnt > first)
			spec__free(&specs->v[--specs->cnt]);
	}
	return err_code;
}

int probe_pack__load(const char *path, struct probe_pack *pack, struct probe_specs *specs,
		     char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t len = 0, cap = 0, n;
	int ret;

	if (!f) {
		snprintf(err, errlen, "cannot read probe pack %s: %s", path, strerror(errno));
		return -errno;
	}
	do {
		if (cap - len < 4096) {
			if (cap > (16u << 20)) {
				fclose(f);
				free(text);
				snprintf(err, errlen, "%s: larger than 16 MiB, not a probe pack", path);
				return -EFBIG;
			}
			cap = cap ? cap * 2 : 8192;
			text = xrealloc(text, cap, 1);
		}
		n = fread(text + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	text[len] = 0;
	if (strlen(text) != len) {
		free(text);
		snprintf(err, errlen, "%s:1: not valid JSON (NUL byte)", path);
		return -EINVAL;
	}
	ret = probe_pack__parse(text, path, pack, specs, err, errlen);
	free(text);
	return ret;
}

const char *probe_pack__dir(void)
{
	static char dir[PATH_MAX];
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	const char *env = getenv("TRACER_PROBES");
	static const char *const rel[] = { "../probes", "../share/tracer/probes" };
	struct stat st;
	ssize_t n;

	if (env && *env)
		return env;
	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		/* once: dirname() cuts its argument in place, a second call would climb a level */
		const char *bin = dirname(exe);

		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(cand, sizeof(cand), "%s/%s", bin, rel[i]);
			if (!stat(cand, &st) && S_ISDIR(st.st_mode) && realpath(cand, dir))
				return dir;
		}
	}
	snprintf(dir, sizeof(dir), "/usr/local/share/tracer/probes");
	return dir;
}

int probe_pack__find(const char *name, char *path, size_t len)
{
	struct stat st;

	if (strchr(name, '/') || strstr(name, ".json")) {
		snprintf(path, len, "%s", name);
		return stat(path, &st) ? -errno : 0;
	}
	snprintf(path, len, "%s/%s.json", probe_pack__dir(), name);
	return stat(path, &st) ? -ENOENT : 0;
}

static int pack_cmp(const void *a, const void *b)
{
	return strcmp(((const struct probe_pack *)a)->name, ((const struct probe_pack *)b)->name);
}

int probe_pack__list(struct probe_pack **packs)
{
	const char *dir = probe_pack__dir();
	struct dirent *de;
	char path[PATH_MAX], err[512];
	int cnt = 0;
	DIR *d = opendir(dir);

	*packs = NULL;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		struct probe_pack pack;

		if (l < 6 || strcmp(de->d_name + l - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (probe_pack__load(path, &pack, NULL, err, sizeof(err))) {
			pr_warn("%s", err);
			continue;
		}
		*packs = xrealloc(*packs, cnt + 1, sizeof(**packs));
		(*packs)[cnt++] = pack;
	}
	closedir(d);
	qsort(*packs, cnt, sizeof(**packs), pack_cmp);
	return cnt;
}

void probe_pack__free(struct probe_pack *pack)
{
	for (size_t i = 0; i < pack->when_cnt; i++)
		free(pack->when_maps[i]);
	free(pack->when_maps);
	free(pack->name);
	free(pack->description);
	free(pack->path);
	memset(pack, 0, sizeof(*pack));
}

void probe_specs__free(struct probe_specs *specs)
{
	for (size_t i = 0; i < specs->cnt; i++)
		spec__free(&specs->v[i]);
	free(specs->v);
	specs->v = NULL;
	specs->cnt = 0;
}
