// libpng behind a C shim: libpng reports errors with longjmp, which Swift cannot call, so every
// entry point here sets up setjmp itself and returns a status. Seen only by MarkerdRender.
#ifndef CPNG_H
#define CPNG_H
#include <stddef.h>
#include <stdint.h>
#endif
