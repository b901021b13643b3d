/*
 * Cross-memory attach between ranks of one node: the CMA single-copy protocol's row (cma.c,
 * single_copy.h), and its copies for the layers that read or write a peer's memory themselves
 * (the direct collectives).
 */
#ifndef COHORT_PROTO_CMA_H
#define COHORT_PROTO_CMA_H

#include <stddef.h>
#include <stdint.h>
#include "core/context.h"

/* Read @a len bytes at @a addr of process @a pid (world rank @a world_rank, on this node) into
 * @a dst (counted in cohort_stats' single copies). @return COHORT_OK; COHORT_ERR_UNSUPPORTED when
 * the kernel refuses (or COHORT_FAULT says so; @a why says which, nothing logged);
 * COHORT_ERR_PEER_FAILED when the process is gone (the peer is failed); COHORT_ERR_UCX when its
 * buffer is not there (logged). */
cohort_status_t cohort_cma_pull(cohort_context_t *ctx, int world_rank, int32_t pid, void *dst,
                                uint64_t addr, size_t len, const char **why);
/* The same the other way: write @a len bytes of @a src at @a addr of process @a pid. */
cohort_status_t cohort_cma_push(cohort_context_t *ctx, int world_rank, int32_t pid, const void *src,
                                uint64_t addr, size_t len, const char **why);
/* Whether this context may copy to and from its node's ranks (COHORT_CMA, the kernel's ptrace
 * scope), as found at init and never changed since, even after a refusal turned the point-to-
 * point single copy off: what the direct collectives go by, so every member of a node chooses
 * alike. */
int cohort_cma_direct(const cohort_context_t *ctx);
/* Whether the kernel lets this process take a peer's file descriptor (pidfd_getfd, probed at
 * init): how the shared-memory collectives reach their group's segment. */
int cohort_cma_fd_share(const cohort_context_t *ctx);

#endif
