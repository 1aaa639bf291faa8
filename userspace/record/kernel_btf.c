// SPDX-License-Identifier: MIT
#include "record/kernel_btf.h"
#include "util/util.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int kernel_btf__check(const char *path)
{
	int err;

	if (!access(path, R_OK))
		return 0;
	err = -errno;
	if (err == -ENOENT)
		pr_err("the kernel has no BTF (%s is missing): tracer's BPF programs need a kernel "
		       "built with CONFIG_DEBUG_INFO_BTF=y, as Debian 11+, Ubuntu 20.10+, Fedora and "
		       "RHEL 8.2+ ship theirs; boot such a kernel (uname -r says which runs now)",
		       path);
	else
		pr_err("cannot read the kernel's BTF (%s): %s", path, strerror(-err));
	return err;
}
