// SPDX-License-Identifier: MIT
#include "python/py_ticks.h"
#include "util/util.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int py_ticks__attach(struct py_ticks *t, struct bpf_program *prog, unsigned int hz)
{
	struct perf_event_attr attr;
	int ncpus, ret = 0;

	memset(t, 0, sizeof(*t));
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	/* a period in ns, not a frequency: the kernel turns cpu-clock's into one anyway */
	t->period_ns = 1000000000ull / hz;
	attr.sample_period = t->period_ns;
	t->rand = now_ns() ^ ((uint64_t)getpid() << 32);
	t->links = xcalloc(ncpus, sizeof(*t->links));
	t->fds = xcalloc(ncpus, sizeof(*t->fds));
	for (int cpu = 0; cpu < ncpus; cpu++) {
		int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		struct bpf_link *l;

		if (fd < 0) {
			if (errno == ENODEV || errno == EINVAL) /* a possible CPU that is offline */
				continue;
			ret = -errno;
			break;
		}
		l = bpf_program__attach_perf_event(prog, fd);
		if (!l) {
			ret = -errno;
			close(fd);
			break;
		}
		t->fds[t->nlinks] = fd;
		t->links[t->nlinks++] = l; /* the link owns fd */
	}
	if (ret)
		py_ticks__detach(t);
	return ret;
}

void py_ticks__detach(struct py_ticks *t)
{
	for (size_t i = 0; i < t->nlinks; i++)
		bpf_link__destroy(t->links[i]);
	free(t->links);
	free(t->fds);
	memset(t, 0, sizeof(*t));
}

void py_ticks__dither(struct py_ticks *t)
{
	for (size_t i = 0; i < t->nlinks; i++) {
		double spread = PY_TICK_DITHER * (2 * random_unit(&t->rand) - 1);
		uint64_t period = t->period_ns * (1 + spread);

		/* the new period counts from now on that CPU (the kernel restarts its timer); a
		 * failure leaves the one it had */
		ioctl(t->fds[i], PERF_EVENT_IOC_PERIOD, &period);
	}
}
