/* Group ids: derived locally, identical on every member, no message exchanged. */
#ifndef COHORT_GROUP_ID_H
#define COHORT_GROUP_ID_H

#include <stdint.h>

/* Hash of (tag, ordered members): the key under which creations of identical groups are
 * counted. world_ranks NULL means 0..nranks-1 (the world, without an array). Never 0. */
uint64_t cohort_group_key(const char *tag, const int *world_ranks, int nranks);

/* The id of the @a instance-th group (0-based) created with key @a key. Never 0. */
uint64_t cohort_group_id_derive(uint64_t key, uint64_t instance);

#endif
