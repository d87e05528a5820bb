// libprotobuf-c (Debian 12: 1.4.1), seen only by MarkerdAPI (and the generated CMarkerdProto code).
#ifndef CPROTOBUFC_SHIM_H
#define CPROTOBUFC_SHIM_H
#include <protobuf-c/protobuf-c.h>
#endif
