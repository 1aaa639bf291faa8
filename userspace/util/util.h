/* SPDX-License-Identifier: MIT */
/* Messages, time and number parsing, small string helpers. */
#ifndef TRACER_UTIL_H
#define TRACER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum verbosity { VERB_QUIET, VERB_NORMAL, VERB_DEBUG };
extern enum verbosity verbosity;

/* tracer's whole command line, for the trace's metadata. */
extern int cmdline_argc;
extern char **cmdline_argv;

/* Every error is one line on stderr: "tracer: what is wrong; what to do". */
void pr_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

uint64_t now_ns(void); /* CLOCK_MONOTONIC, the clock bpf_ktime_get_ns() reads */
uint64_t realtime_ns(void);
/* Uniform in [0, 1) (xorshift64 on *state, seeded with anything but 0): to spread the times
 * of timers, not a secret. */
double random_unit(uint64_t *state);

/* "1.5s", "20ms", "50us", "300ns"; a bare number is in default_unit_ns. 0 or -EINVAL. */
int parse_duration(const char *s, uint64_t default_unit_ns, uint64_t *ns);
/* Bytes: "4096", "500k", "64M", "2G" (powers of 1024). 0 or -EINVAL. */
int parse_size(const char *s, uint64_t *bytes);
/* A whole number in [min, max]. 0 or -EINVAL / -ERANGE. */
int parse_long(const char *s, long min, long max, long *out);

/* The kernel's largest possible pid (include/linux/threads.h). */
#define PID_MAX_LIMIT 4194304
/* A process id, 1..PID_MAX_LIMIT. 0 or -EINVAL / -ERANGE. */
int parse_pid(const char *s, int *pid);

/* A command-line mistake, the same way for every command:
 * "tracer: <message> (see tracer [cmd] --help)". Returns 2, the exit status of a usage error.
 * cmd is the subcommand, or NULL for tracer's own (record) options. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "s" unless n is 1: "%zu thread%s", n, plural_s(n). */
static inline const char *plural_s(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* Formats a duration with a unit that keeps 3-4 significant digits: "12.3ms". */
const char *fmt_duration(uint64_t ns, char *buf, size_t len);

/* The text rule, one for everything tracer shows or writes. A name from the target, a symbol,
 * a pack, a file reaches a terminal, a message, a CSV cell, an HTML page or a JSON string only
 * as characters that show as themselves. Hidden characters: C0 controls and DEL (ESC, BEL, CR,
 * NUL...), C1 controls (U+0080-U+009F; U+009B is a CSI) and the bidirectional controls that
 * reorder what follows (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069). Text shows each
 * of them, and each byte that is not UTF-8, as U+FFFD; JSON escapes them as \uXXXX
 * (trace/json_text.h), which keeps the value. */

/* Length of the valid UTF-8 sequence at s (at most n bytes, n > 0) with its code point in *cp,
 * or 0 (overlong, surrogate, cut or stray bytes). */
size_t utf8_next(const char *s, size_t n, uint32_t *cp);

/* Whether the code point is one the rule hides. */
bool text_hidden(uint32_t cp);

/* Copies n bytes of s as text safe for a terminal, a CSV cell and a C string: each hidden
 * character and each byte that is not UTF-8 becomes U+FFFD, so a name never moves the cursor,
 * retitles a window or turns the line around. Writes at most len-1 bytes plus NUL (3 * n + 1
 * always fits), never a part of a character, and returns the length written. */
size_t text_safe(char *out, size_t len, const char *s, size_t n);

/* text_safe() of the string s into a new string (free it). */
char *text_safe_dup(const char *s);

/* text_safe() of the string s into buf (len bytes); returns buf. */
const char *printable(const char *s, char *buf, size_t len);

/* Bytes out needs for csv_cell() of n bytes. */
#define CSV_CELL_MAX(n) (3 * (n) + 4)

/* n bytes of s as one quoted CSV cell under text_safe's rule. A cell that would start with
 * '=', '+', '-' or '@' gets a leading single quote, so that a spreadsheet shows it as text
 * instead of running it as a formula (OWASP's CSV injection advice). out holds
 * CSV_CELL_MAX(n) bytes; returns the length written (plus a NUL). */
size_t csv_cell(char *out, const char *s, size_t n);

/* "Did you mean": the three names nearest to the literal part of a glob (its characters other
 * than *?[]), kept as copies; a name is near when at most a third of its characters differ
 * (one, in a name shorter than 6). */
struct near_names {
	char want[256];
	char *name[3];
	int dist[3];
};

void near_names__init(struct near_names *nr, const char *glob);
void near_names__offer(struct near_names *nr, const char *name);
/* Appends "; did you mean: a, b, c" to buf (nothing when none is near); the length added. */
size_t near_names__format(const struct near_names *nr, char *buf, size_t len);
void near_names__free(struct near_names *nr);

/* Edit distance (insertions, deletions, substitutions, swaps of two neighbours: the optimal
 * string alignment distance), capped at cap (returns cap when larger). */
int edit_distance(const char *a, const char *b, int cap);

/* The user who ran tracer: SUDO_UID/SUDO_GID under sudo, else the real ids. -EINVAL when they
 * are set but malformed (or only one is): the caller must refuse, not act as root. */
int invoking_user(uid_t *uid, gid_t *gid);
/* invoking_user(), checked once up front: prints what is wrong; 0 or -EINVAL. */
int check_invoking_user(void);

char *xstrdup(const char *s); /* aborts on out-of-memory: nothing sensible is left to do */
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n, size_t size);

/* qsort's comparisons, ascending: of doubles, of uint64_t. */
int cmp_double(const void *a, const void *b);
int cmp_u64(const void *a, const void *b);

#endif
