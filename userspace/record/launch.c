// SPDX-License-Identifier: MIT
#include "record/launch.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <grp.h>
#include <libelf.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

/* In the child: become the invoking user (not root, under sudo), then exec under ptrace so the
 * kernel stops it at the exec. Reports an exec failure's errno through the pipe. */
static void child(char **argv, bool stdout_to_stderr, int report_fd)
{
	sigset_t none;
	uid_t uid;
	gid_t gid;
	int e;

	if (invoking_user(&uid, &gid)) {
		errno = EINVAL; /* checked before the launch: never run it as root instead */
		goto fail;
	}
	if (getuid() == 0 && uid != 0) {
		struct passwd *pw = getpwuid(uid);

		if ((pw ? initgroups(pw->pw_name, gid) : setgroups(0, NULL)) || setgid(gid) ||
		    setuid(uid))
			goto fail;
	}
	if (stdout_to_stderr && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		goto fail;
	/* tracer blocks its stop signals from the start (recording__block_signals): the command
	 * starts with none blocked, as from a shell */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
		goto fail;
	execvp(argv[0], argv);
fail:
	e = errno;
	if (write(report_fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int launch__start(char **argv, bool stdout_to_stderr, pid_t *pidp, char *err, size_t errlen)
{
	int fds[2], status, e = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(fds[0]);
		close(fds[1]);
		snprintf(err, errlen, "cannot start %s: %s", argv[0], strerror(e));
		return -e;
	}
	if (pid == 0) {
		close(fds[0]);
		child(argv, stdout_to_stderr, fds[1]);
	}
	close(fds[1]);
	if (read(fds[0], &e, sizeof(e)) == sizeof(e)) {
		close(fds[0]);
		waitpid(pid, &status, 0);
		snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(e));
		return -e;
	}
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		snprintf(err, errlen, "%s did not start", argv[0]);
		return -ECHILD;
	}
	*pidp = pid;
	return 0;
}

int launch__entry_offset(pid_t pid, uint64_t *offset)
{
	char path[64];
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t n;
	Elf *elf;
	int fd, ret = -ENOEXEC;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && gelf_getehdr(elf, &eh) && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n; i++) {
			if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X) || eh.e_entry < ph.p_vaddr ||
			    eh.e_entry >= ph.p_vaddr + ph.p_filesz)
				continue;
			*offset = eh.e_entry - ph.p_vaddr + ph.p_offset;
			ret = 0;
			break;
		}
	}
	elf_end(elf);
	close(fd);
	return ret;
}

int launch__run_to_entry(pid_t pid, char *err, size_t errlen)
{
	int status;

	if (ptrace(PTRACE_DETACH, pid, NULL, NULL))
		return -errno;
	if (waitpid(pid, &status, WUNTRACED) != pid)
		return -errno;
	if (WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP)
		return 0;
	if (WIFEXITED(status))
		snprintf(err, errlen, "the command exited with status %d before it started",
			 WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(err, errlen, "the command was killed by signal %d before it started",
			 WTERMSIG(status));
	else
		snprintf(err, errlen, "the command stopped with signal %d before it started",
			 WSTOPSIG(status));
	return -ECHILD;
}

int launch__exit_status(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

int launch__wait(pid_t pid, int forward_signal)
{
	const struct timespec tick = { 0, 100 * 1000 * 1000 };
	siginfo_t si;
	sigset_t mask;
	int status, waited = 0;

	if (forward_signal)
		kill(pid, forward_signal);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL); /* taken with sigtimedwait, never by a handler */
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (sigtimedwait(&mask, &si, &tick) > 0) {
			pr_info("%s: killing %d, which has not exited", strsignal(si.si_signo), pid);
			kill(pid, SIGKILL);
			return launch__exit_status(pid);
		}
		if (++waited == 10)
			pr_info("waiting for %d to exit (Ctrl-C again, or SIGTERM, kills it)", pid);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}
