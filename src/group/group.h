#ifndef COHORT_GROUP_H
#define COHORT_GROUP_H

#include "cohort.h"
#include "core/list.h"

typedef enum {
    COHORT_GROUP_USER,  /* cohort_group_create: freed by cohort_group_free */
    COHORT_GROUP_WORLD, /* owned by the context */
    COHORT_GROUP_LAYOUT /* owned by a layout */
} cohort_group_owner_t;

struct cohort_group {
    cohort_context_t *ctx;
    uint64_t gid;
    char *tag;
    int size;
    int rank;
    int *members;             /* world ranks, in group order */
    int owner;                /* cohort_group_owner_t */
    int prepared;             /* exchange plugin's group_prepare done */
    int revoked;              /* cohort_group_abort was called */
    uint32_t coll_seq;        /* collectives posted so far */
    uint32_t *send_seq;       /* [size] P2P messages sent to each member (lazily allocated) */
    uint32_t *recv_seq;       /* [size] P2P messages from each member delivered to matching */
    cohort_list_t posted;     /* receives waiting for a message (cohort_xfer_t) */
    cohort_list_t unexpected; /* messages waiting for a receive (cohort_msg_t) */
    cohort_list_t held;       /* P2P messages that overtook an earlier one from their sender */
    cohort_list_t requests;   /* outstanding requests on this group */
    cohort_list_t link;       /* in the context's group list */
};

/* Validate a user-supplied handle without dereferencing a stale one: INVALID_ARG (logged,
 * naming @a what) for NULL, freed or foreign handles. */
cohort_status_t cohort_group_check(const cohort_group_t *group, const char *what);

/* Internal creation, shared by the public call, the world and layouts. */
cohort_status_t cohort_group_create_owned(cohort_context_t *ctx, const char *tag,
                                          const int *world_ranks, int nranks, int owner,
                                          cohort_group_t **group);
void cohort_group_destroy(cohort_group_t *group);

/* First use of a group on this rank: the exchange plugin's group_prepare, once. */
cohort_status_t cohort_group_prepare(cohort_group_t *group);

#endif
