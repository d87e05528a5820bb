// Cairo 1.16 (Debian 12), seen only by MarkerdRender (pin sprites).
#ifndef CCAIRO_SHIM_H
#define CCAIRO_SHIM_H
#include <cairo.h>
#endif
