// The NATS C client 3.4 (Debian 12's libnats-dev) with JetStream and key-value support, seen only
// by MarkerdCluster: the replicated log (a JetStream stream) and the layer placement map (a
// JetStream key-value bucket) of cluster mode.
#ifndef CNATS_SHIM_H
#define CNATS_SHIM_H
#include <nats/nats.h>
#endif
