// libnng 1.5.2 (Debian 12), seen only by MarkerdTransport.
#ifndef CNNG_SHIM_H
#define CNNG_SHIM_H
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/http/http.h>
#include <nng/supplemental/util/platform.h>
#endif
