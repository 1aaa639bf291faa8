// SPDX-License-Identifier: MIT
#include "python/py_proc.h"
#include "python/py_debug_offsets.h"
#include "elf/elf_datasym.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

int py_mem__read(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* "python3.11", "python3.11d", "libpython3.11.so.1.0": the version in the name, if any. */
static bool name_version(const char *base, int *major, int *minor)
{
	const char *p = strstr(base, "python");

	return p && sscanf(p + 6, "%d.%d", major, minor) == 2;
}

static bool maybe_python(const char *base)
{
	return !strncmp(base, "python", 6) || !strncmp(base, "libpython", 9);
}

/* Looks for _PyRuntime in the object mapped at [start, end) with file offset 0. */
static int try_object(struct py_proc *p, const char *path, uint64_t start, uint64_t end)
{
	char file[96];
	struct elf_datasym sym;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	uint64_t bias = 0, hex;
	int fd, ret;

	/* the mapped inode itself: replaced files and other mount namespaces still work */
	snprintf(file, sizeof(file), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, p->pid, start, end);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = elf_datasym__find(fd, "_PyRuntime", &sym);
	if (!ret) {
		if (sym.pie)
			bias = start - sym.load_vaddr;
		p->runtime = sym.value + bias;
		snprintf(p->object, sizeof(p->object), "%s", base);
		/* 3.11+ exports its PY_VERSION_HEX; older ones are named by their file */
		if (!elf_datasym__find(fd, "Py_Version", &sym) &&
		    !py_mem__read(p->pid, sym.value + bias, &hex, 4)) {
			p->major = (hex >> 24) & 0xff;
			p->minor = (hex >> 16) & 0xff;
		} else if (!name_version(base, &p->major, &p->minor)) {
			p->major = p->minor = 0;
		}
	}
	close(fd);
	return ret;
}

/* A version newer than the newest table (3.14 on) has its frames read with its own debug
 * offsets, laid out as the newest layout this build knows up to that version, and what those
 * lack as the newest table has it (py_proc__offsets_from names those readings). p->from stays
 * PY_OFF_NONE, p->dbg_why saying why, when they cannot be read. */
static void newer_version(struct py_proc *p)
{
	const struct py_version *table = py_version__newest(), *layout;
	const size_t dbg = offsetof(struct py_offsets, dbg_size);
	struct py_offsets base;

	if (p->major != table->major || p->minor < table->minor)
		return; /* older than the oldest table, or no version read */
	layout = py_version__layout(p->major, p->minor);
	if (!layout) {
		snprintf(p->dbg_why, sizeof(p->dbg_why),
			 "this build knows no _Py_DebugOffsets layout of %d.%d", p->major, p->minor);
		return;
	}
	base = table->off;
	/* where its GIL is, only its own debug offsets say (3.14 on); the GIL's cond and mutex
	 * are read as in the table */
	base.gil_at = 0;
	memcpy((char *)&base + dbg, (const char *)&layout->off + dbg, sizeof(base) - dbg);
	if (py_debug_offsets__read(p->pid, p->runtime, p->major, p->minor, &base, &p->off,
				   &p->dbg_changed, p->dbg_why, sizeof(p->dbg_why)))
		return;
	if (!p->off.gil_at) /* not found: its waits are not told */
		p->off.gil_via_interp = p->off.gil_wait_lo = p->off.gil_wait_hi = 0;
	p->from = PY_OFF_DEBUG;
	p->table_minor = table->minor;
	p->layout_minor = layout->minor;
}

int py_proc__detect(int pid, struct py_proc *p)
{
	char path[64], line[4096];
	int ret = -ENOENT;
	FILE *f;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char *file = strchr(line, '/'), *nl, *base;

		if (!file || sscanf(line, "%llx-%llx %*s %llx", &start, &end, &off) != 3 || off)
			continue;
		if ((nl = strchr(file, '\n')))
			*nl = 0;
		base = strrchr(file, '/') + 1;
		if (maybe_python(base))
			ret = try_object(p, file, start, end);
		if (ret && ret != -ENOENT)
			ret = -ENOENT; /* unreadable or not ELF: keep looking */
	}
	fclose(f);
	if (ret)
		return ret;
	p->ver = py_version__find(p->major, p->minor);
	if (!p->ver) {
		newer_version(p);
		return 0;
	}
	p->off = p->ver->off;
	p->from = PY_OFF_TABLE;
	if (p->ver->off.dbg_size) {
		ret = py_debug_offsets__read(pid, p->runtime, p->major, p->minor, &p->ver->off,
					     &p->off, &p->dbg_changed, p->dbg_why,
					     sizeof(p->dbg_why));
		if (!ret)
			p->from = PY_OFF_DEBUG;
		else if (ret == -ENOEXEC)
			p->from = PY_OFF_NONE;
	}
	return 0;
}

const char *py_proc__offsets_from(const struct py_proc *p, char *buf, size_t len)
{
	if (p->from == PY_OFF_DEBUG && p->layout_minor)
		snprintf(buf, len, "its own _Py_DebugOffsets laid out as %d.%d's (%d field%s differ "
				   "from the build's %d.%d table; not in them, read as in %d.%d: the "
				   "entry frames' owner, co_nlocalsplus, str kind bits, dict keys, "
				   "module and instance dicts, the GIL's cond and mutex)",
			 p->major, p->layout_minor, p->dbg_changed, p->dbg_changed == 1 ? "" : "s",
			 p->major, p->table_minor, p->major, p->table_minor);
	else if (p->from == PY_OFF_DEBUG)
		snprintf(buf, len, "its own _Py_DebugOffsets (%d field%s differ from the build's "
				   "%d.%d table)",
			 p->dbg_changed, p->dbg_changed == 1 ? "" : "s", p->major, p->minor);
	else if (p->from == PY_OFF_TABLE && p->dbg_why[0])
		snprintf(buf, len, "the build's %d.%d table (debug offsets not used: %s)", p->major,
			 p->minor, p->dbg_why);
	else if (p->from == PY_OFF_TABLE)
		snprintf(buf, len, "the build's %d.%d table", p->major, p->minor);
	else
		snprintf(buf, len, "nothing (no table nor debug offsets for %d.%d)", p->major,
			 p->minor);
	return buf;
}
