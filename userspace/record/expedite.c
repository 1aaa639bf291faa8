// SPDX-License-Identifier: MIT
/* Closing a perf-event uprobe (the per-function fallback of kernels without uprobe_multi)
 * ends in perf_uprobe_destroy(), which under the global event_mutex unregisters the uprobe
 * (register_for_each_vma: percpu_down_write(&dup_mmap_sem), a synchronize_rcu() when it was
 * idle) and then calls tracepoint_synchronize_unregister() (6.1: synchronize_srcu() and
 * synchronize_rcu()): about three grace periods per link, one link after another, however many
 * threads close them. With rcu_expedited set, synchronize_rcu() and synchronize_srcu() take
 * expedited grace periods. */
#include "record/expedite.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define RCU_EXPEDITED "/sys/kernel/rcu_expedited"

static int write_value(char c)
{
	int fd = open(RCU_EXPEDITED, O_WRONLY | O_CLOEXEC), e = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, &c, 1) != 1)
		e = -errno;
	close(fd);
	return e;
}

void expedite__begin(struct expedite *x, const char *why)
{
	char c = 0;
	int fd, e;

	x->set = false;
	fd = open(RCU_EXPEDITED, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		pr_debug("%s: cannot read %s: %s", why, RCU_EXPEDITED, strerror(errno));
		return;
	}
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	if (c != '0') { /* 1 already (or unreadable): left as it is */
		pr_debug("%s: %s is %c: left as it is", why, RCU_EXPEDITED, c ? c : '?');
		return;
	}
	e = write_value('1');
	if (e) {
		pr_debug("%s: cannot set %s: %s", why, RCU_EXPEDITED, strerror(-e));
		return;
	}
	x->set = true;
	pr_debug("%s: %s set to 1 meanwhile (expedited grace periods)", why, RCU_EXPEDITED);
}

void expedite__end(struct expedite *x)
{
	int e;

	if (!x->set)
		return;
	x->set = false;
	e = write_value('0');
	if (e)
		pr_warn("cannot set %s back to 0: %s", RCU_EXPEDITED, strerror(-e));
	else
		pr_debug("%s back to 0", RCU_EXPEDITED);
}
