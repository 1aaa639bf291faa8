// SPDX-License-Identifier: MIT
/* Prints the struct fields a pack's "name_from" may follow (argN->Type.field->...), as C
 * initializers of struct struct_field (userspace/probe/struct_fields.h). Built and run at build
 * time against the libraries' -dev headers, so no offset is ever typed by hand:
 *
 *   cc $(pkg-config --cflags gstreamer-1.0) tools/struct_fields.c -o fields && ./fields
 *
 * A library whose headers are missing contributes no fields; a pack that names them then
 * fails to load with a line saying so. */
#include <stddef.h>
#include <stdio.h>

#define F(type, field) \
	printf("\t{ \"%s.%s\", %zu },\n", #type, #field, offsetof(type, field))

#ifdef HAVE_GSTREAMER
#include <gst/gst.h>

static void gstreamer(void)
{
	/* an element's or a pad's name; a pad's element; the pad a pad is linked to */
	F(GstObject, name);
	F(GstObject, parent);
	F(GstPad, peer);
}
#endif

int main(void)
{
#ifdef HAVE_GSTREAMER
	gstreamer();
#endif
	return 0;
}
