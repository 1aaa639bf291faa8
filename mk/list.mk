# `tracer list` demangles C++ names with the C++ runtime's __cxa_demangle (userspace/elf/demangle.c).
PKG_LIBS += -lstdc++
