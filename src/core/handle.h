/*
 * Handles: what the user holds for a group, a layout or a request is not a pointer but a
 * (slot, generation) pair in one process-wide table. A slot lives until the process exits; freeing
 * the object moves its slot to the next generation, so a stale handle (freed, or its context
 * finalized) is recognised on every later call and never dereferenced. A handle value has its
 * top bit set, an address no user-space pointer has, so code that forgets to decode one faults
 * at once instead of reading the wrong object.
 */
#ifndef COHORT_HANDLE_H
#define COHORT_HANDLE_H

#include <stdint.h>

typedef enum {
    COHORT_HANDLE_GROUP = 1,
    COHORT_HANDLE_LAYOUT = 2,
    COHORT_HANDLE_REQUEST = 3,
} cohort_handle_kind_t;

/* A new handle naming @a obj, or 0 when out of memory. */
uintptr_t cohort_handle_new(cohort_handle_kind_t kind, void *obj);
/* The object @a handle names, or NULL with *why saying what the handle is instead ("freed",
 * "never made by cohort", "a handle of another kind"). Never reads through @a handle. */
void *cohort_handle_get(const void *handle, cohort_handle_kind_t kind, const char **why);
/* The same for a handle a user passed: NULL and what it is instead are logged, naming
 * @a what ("cohort_wait: req"). */
void *cohort_handle_lookup(const void *handle, cohort_handle_kind_t kind, const char *what);
/* The handle stops naming anything; its slot is reused (oldest first) at a new generation.
 * 0 is ignored. */
void cohort_handle_retire(uintptr_t handle);

#endif
