/* SPDX-License-Identifier: MIT */
/* USDT probes (SystemTap SDT, <sys/sdt.h>) of an ELF object, from its .note.stapsdt notes: where
 * each probe is, its semaphore (the counter a probe's user must raise so that the program
 * evaluates the arguments; the kernel does it for a uprobe given the counter's file offset),
 * and its arguments decoded from their operand strings ("-4@%edi", "8@-16(%rbp)", "4@$5"). */
#ifndef TRACER_USDT_H
#define TRACER_USDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define USDT_MAX_ARGS 12

enum usdt_arg_kind {
	USDT_ARG_CONST, /* $N: the value is val */
	USDT_ARG_REG,	/* %reg: the register's value */
	USDT_ARG_MEM,	/* off(%reg): the value at register + val */
};

struct usdt_arg {
	enum usdt_arg_kind kind;
	int size;	  /* bytes: 1, 2, 4 or 8 */
	bool is_signed;	  /* "-4@...": sign-extend */
	uint32_t reg_off; /* offset of the register in struct pt_regs (USDT_ARG_REG, _MEM) */
	int64_t val;	  /* the constant, or the memory operand's displacement */
};

struct usdt_probe {
	char *provider, *name;
	uint64_t addr;	      /* the probe's address, as linked (adjusted for prelink) */
	uint64_t offset;      /* its file offset: where the uprobe goes */
	uint64_t sema_offset; /* file offset of the semaphore; 0: none */
	char *args_text;
	int nargs;
	struct usdt_arg args[USDT_MAX_ARGS];
	bool args_ok; /* every operand was understood */
};

struct usdt_probes {
	struct usdt_probe *v;
	size_t cnt;
};

/* Reads the USDT notes of the ELF file open on fd. 0 (cnt may be 0), or -ENOEXEC. */
int usdt__read_fd(int fd, struct usdt_probes *out);
int usdt__read(const char *path, struct usdt_probes *out);
void usdt_probes__free(struct usdt_probes *p);

/* Parses one operand ("-4@%edi"): 0 or -EINVAL. */
int usdt_arg__parse(const char *text, struct usdt_arg *arg);
/* Parses a space-separated operand list into args; the count, or -EINVAL. */
int usdt_args__parse(const char *text, struct usdt_arg *args, int max);

#endif
