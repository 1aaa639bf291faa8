// SPDX-License-Identifier: MIT
/* Repair: closes a trace that was cut short (tracer killed with SIGKILL, the
 * machine lost power). Every complete event line is kept; the end of the file is rewritten. */
#include "trace/repair.h"
#include "trace/json_text.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char header[] = "{\"traceEvents\":[\n";

/* One line of "traceEvents": a whole JSON object, with a trailing comma. Returns its ts in ns
 * (0 when it has none) or -1 when the line is not a complete event. */
static int64_t event_line(const char *line, size_t len)
{
	const cJSON *ts;
	int64_t ns = 0;
	cJSON *e;

	if (len < 4 || strcmp(line + len - 2, ",\n"))
		return -1;
	e = cJSON_ParseWithLength(line, len - 2);
	if (!cJSON_IsObject(e)) {
		cJSON_Delete(e);
		return -1;
	}
	ts = cJSON_GetObjectItem(e, "ts");
	if (cJSON_IsNumber(ts) && ts->valuedouble > 0)
		ns = (int64_t)(ts->valuedouble * 1000 + 0.5);
	cJSON_Delete(e);
	return ns;
}

static bool whole_json(FILE *f)
{
	char *text = NULL;
	size_t cap = 0, len = 0, n;
	cJSON *j;

	rewind(f);
	do {
		if (cap - len < 65536)
			text = xrealloc(text, cap = cap ? 2 * cap : 1 << 20, 1);
		n = fread(text + len, 1, cap - len - 1, f);
		len += n;
	} while (n);
	text[len] = 0;
	j = cJSON_Parse(text);
	free(text);
	cJSON_Delete(j);
	return j != NULL;
}

int trace_repair(const char *path)
{
	uint64_t good = 0, events = 0, last_ns = 0;
	char *line = NULL, end[512];
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int ret = -EINVAL;

	if (strlen(path) > 3 && !strcmp(path + strlen(path) - 3, ".gz")) {
		pr_err("cannot repair a .gz file in place: zcat %s > TRACE.json reads what is there, "
		       "then run tracer repair TRACE.json", path);
		return -EINVAL;
	}
	f = fopen(path, "r+e");
	if (!f) {
		pr_err("cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	len = getline(&line, &cap, f);
	if (len != (ssize_t)strlen(header) || strcmp(line, header)) {
		pr_err("%s is not a trace written by tracer (it starts with {\"traceEvents\":[ on a "
		       "line of its own)", path);
		goto out;
	}
	good = len;
	while ((len = getline(&line, &cap, f)) > 0) {
		int64_t ns = event_line(line, len);

		if (ns < 0)
			break;
		good += len;
		events++;
		if ((uint64_t)ns > last_ns)
			last_ns = ns;
	}
	if (len > 0 && !strncmp(line, "{\"ph\":\"i\",\"s\":\"g\",\"name\":\"recording stopped\"", 44) &&
	    whole_json(f)) {
		pr_info("%s is complete: nothing to repair", path);
		ret = 0;
		goto out;
	}
	/* cut after the last complete event and write the end a recording writes */
	if (fflush(f) || ftruncate(fileno(f), good) || fseek(f, good, SEEK_SET)) {
		pr_err("cannot repair %s: %s", path, strerror(errno));
		goto out;
	}
	fmt_us(end, last_ns);
	fprintf(f,
		"{\"ph\":\"i\",\"s\":\"g\",\"name\":\"recording stopped\",\"pid\":0,\"tid\":0,"
		"\"ts\":%s,\"args\":{\"reason\":\"cut short; repaired\"}}\n],\n"
		"\"systemTraceEvents\":\"# tracer: nop\\n\",\n"
		"\"metadata\":{\"repaired\":true,\"events_kept\":%llu,\"note\":\"the recording was cut "
		"short: events after the last one kept, the scheduler text and the recording's own "
		"metadata are missing\"}}\n",
		end, (unsigned long long)events);
	if (fflush(f) || ferror(f)) {
		pr_err("cannot repair %s: %s", path, strerror(errno));
		goto out;
	}
	pr_info("repaired %s: kept %llu event%s", path, (unsigned long long)events,
		plural_s(events));
	ret = 0;
out:
	free(line);
	fclose(f);
	return ret;
}
