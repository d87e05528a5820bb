// Pango 1.50 over Cairo (Debian 12): shaping (HarfBuzz), bidi (FriBidi) and font fallback
// (fontconfig) for all text MarkerdRender draws. Seen only by MarkerdRender.
#ifndef CPANGO_SHIM_H
#define CPANGO_SHIM_H
#include <pango/pangocairo.h>
#endif
