// libnng 1.5.2 (Debian 12), seen only by MarkerdTransport.
#ifndef CNNG_SHIM_H
#define CNNG_SHIM_H
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/supplemental/http/http.h>
#include <nng/supplemental/tls/tls.h>
#include <nng/supplemental/util/platform.h>

// Macros and enum values Swift imports awkwardly (unsigned flags, enum structs).
static inline int cnng_flag_nonblock(void) { return (int)NNG_FLAG_NONBLOCK; }
static inline int cnng_errno(enum nng_errno_enum e) { return (int)e; }
#endif
