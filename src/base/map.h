/* A small open-addressing map from nonzero 64-bit keys to pointers (linear probing). */
#ifndef COHORT_MAP_H
#define COHORT_MAP_H

#include <stddef.h>
#include <stdint.h>
#include "cohort.h"

typedef struct {
    uint64_t *keys; /* 0 marks an empty slot */
    void **vals;
    size_t cap; /* power of two */
    size_t count;
} cohort_map_t;

void cohort_map_init(cohort_map_t *m);
void cohort_map_cleanup(cohort_map_t *m);
void *cohort_map_get(const cohort_map_t *m, uint64_t key);
/* Insert or replace. */
cohort_status_t cohort_map_put(cohort_map_t *m, uint64_t key, void *val);
void cohort_map_del(cohort_map_t *m, uint64_t key);

#endif
