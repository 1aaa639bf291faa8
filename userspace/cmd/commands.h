/* SPDX-License-Identifier: MIT */
/* tracer's subcommands: `tracer NAME ARGS...`. Each returns the process exit status
 * (0 success, 1 failure, 2 usage error); argv[0] is the subcommand's name. */
#ifndef TRACER_COMMANDS_H
#define TRACER_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_packs(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_repair(int argc, char **argv);

#endif
