/* Group ids whose messages this rank drops on arrival instead of keeping them as orphans
 * (am.c): a group freed here, whose late messages nobody will take, and a group not created
 * here yet that already lost a message over COHORT_ORPHAN_LIMIT, revoked when it is created.
 *
 * Bounded by what the job does, not by how long it runs: a training job that creates and frees
 * groups all day would otherwise keep one entry per group it ever freed. Only the last
 * COHORT_POISON_FREED_KEEP freed ids are kept; a message for a group freed longer ago than that
 * (a sender thousands of frees behind) is kept as an orphan instead, which COHORT_ORPHAN_LIMIT
 * bounds. A lost message's mark is kept until its group is created (each one was logged as an
 * error), since forgetting it would leave that group waiting for the message forever. */
#ifndef COHORT_POISON_H
#define COHORT_POISON_H

#include <stdint.h>
#include "base/map.h"

#define COHORT_POISON_FREED_KEEP 1024

typedef enum {
    COHORT_POISON_NONE = 0,
    COHORT_POISON_FREED,   /* a group that existed here and was freed */
    COHORT_POISON_DROPPED, /* a message for it was dropped before it was created here */
} cohort_poison_mark_t;

typedef struct {
    cohort_map_t marks; /* id -> cohort_poison_mark_t */
    uint64_t freed[COHORT_POISON_FREED_KEEP]; /* ring: the freed ids still marked */
    unsigned next;                            /* the ring's oldest slot, overwritten next */
} cohort_poison_t;

void cohort_poison_init(cohort_poison_t *p);
void cohort_poison_cleanup(cohort_poison_t *p);
cohort_poison_mark_t cohort_poison_get(const cohort_poison_t *p, uint64_t id);
/* Group @a id was freed here; forgets the oldest freed id beyond the bound. */
void cohort_poison_freed(cohort_poison_t *p, uint64_t id);
/* A message for group @a id, not created here yet, was dropped. */
void cohort_poison_dropped(cohort_poison_t *p, uint64_t id);
/* Group @a id is created here: @return its mark, to act on; a lost-message mark is forgotten
 * then (a freed id is never created again: ids are not reused). */
cohort_poison_mark_t cohort_poison_take(cohort_poison_t *p, uint64_t id);
/* How many ids are marked. */
size_t cohort_poison_count(const cohort_poison_t *p);

#endif
