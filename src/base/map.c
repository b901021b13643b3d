#include <stdlib.h>
#include "base/map.h"

static size_t cohort_map_slot(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

void cohort_map_init(cohort_map_t *m)
{
    m->keys = NULL;
    m->vals = NULL;
    m->cap = 0;
    m->count = 0;
}

void cohort_map_cleanup(cohort_map_t *m)
{
    free(m->keys);
    free(m->vals);
    cohort_map_init(m);
}

void *cohort_map_get(const cohort_map_t *m, uint64_t key)
{
    if (m->cap == 0 || key == 0) {
        return NULL;
    }
    for (size_t i = cohort_map_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            return m->vals[i];
        }
        if (m->keys[i] == 0) {
            return NULL;
        }
    }
}

static void cohort_map_insert(cohort_map_t *m, uint64_t key, void *val)
{
    size_t i = cohort_map_slot(key, m->cap);

    while (m->keys[i] != 0 && m->keys[i] != key) {
        i = (i + 1) & (m->cap - 1);
    }
    if (m->keys[i] == 0) {
        m->count++;
    }
    m->keys[i] = key;
    m->vals[i] = val;
}

static cohort_status_t cohort_map_grow(cohort_map_t *m)
{
    cohort_map_t bigger;

    bigger.cap = m->cap == 0 ? 64 : m->cap * 2;
    bigger.count = 0;
    bigger.keys = calloc(bigger.cap, sizeof(*bigger.keys));
    bigger.vals = calloc(bigger.cap, sizeof(*bigger.vals));
    if (bigger.keys == NULL || bigger.vals == NULL) {
        free(bigger.keys);
        free(bigger.vals);
        return COHORT_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] != 0) {
            cohort_map_insert(&bigger, m->keys[i], m->vals[i]);
        }
    }
    free(m->keys);
    free(m->vals);
    *m = bigger;
    return COHORT_OK;
}

cohort_status_t cohort_map_put(cohort_map_t *m, uint64_t key, void *val)
{
    if (key == 0) {
        return COHORT_ERR_INVALID_ARG;
    }
    if ((m->count + 1) * 2 > m->cap) {
        cohort_status_t status = cohort_map_grow(m);
        if (status != COHORT_OK) {
            return status;
        }
    }
    cohort_map_insert(m, key, val);
    return COHORT_OK;
}

void cohort_map_del(cohort_map_t *m, uint64_t key)
{
    size_t i, j;

    if (m->cap == 0 || key == 0) {
        return;
    }
    for (i = cohort_map_slot(key, m->cap); m->keys[i] != key; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == 0) {
            return;
        }
    }
    /* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
    for (j = (i + 1) & (m->cap - 1); m->keys[j] != 0; j = (j + 1) & (m->cap - 1)) {
        size_t home = cohort_map_slot(m->keys[j], m->cap);
        if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = 0;
    m->vals[i] = NULL;
    m->count--;
}
