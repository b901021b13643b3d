/* The rows of the protocol table (proto.c), for the table alone and for protocols that hand a
 * transfer to another (a fallback). The engine never names them (scripts/check-layers.sh). */
#ifndef COHORT_PROTO_PROTOS_H
#define COHORT_PROTO_PROTOS_H

#include "proto/proto.h"

extern const cohort_proto_t cohort_proto_msg;      /* msg.c: UCX eager and rendezvous */
extern const cohort_proto_t cohort_proto_cma;      /* cma.c: cross-memory attach */
extern const cohort_proto_t cohort_proto_cuda_ipc; /* cuda_ipc.c: device memory, same node */

#endif
