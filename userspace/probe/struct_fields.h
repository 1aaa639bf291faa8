/* SPDX-License-Identifier: MIT */
/* The struct fields a pack may follow to name its spans ("name_from": "arg0->GstPad.peer->
 * GstObject.parent->GstObject.name:str"), with offsets from the libraries' own headers. */
#ifndef TRACER_STRUCT_FIELDS_H
#define TRACER_STRUCT_FIELDS_H

#include <stddef.h>

struct struct_field {
	const char *name; /* "Type.field" */
	unsigned long offset;
};

/* The offset of "Type.field" in the target's library, or -1 when tracer was built without it. */
long struct_field__offset(const char *name, size_t len);

/* The fields tracer knows, comma-separated, for a message ("none" when built without any). */
const char *struct_field__known(void);

#endif
