/*
 * A collective's arguments: whether they make a call at all (each refusal says which argument
 * and why, before any call number is used up), and their fingerprint, the same on every member that
 * called the same collective alike.
 */
#include <stdint.h>
#include "coll/coll.h"
#include "base/dtype.h"
#include "core/log.h"
#include "reduce/reduce.h"

/* Same on every member that called the same collective with the same arguments. */
uint32_t cohort_coll_fingerprint(const cohort_coll_args_t *a)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    uint64_t parts[5] = {(uint64_t)a->coll, (uint64_t)a->dt, (uint64_t)a->op, (uint64_t)a->count,
                         (uint64_t)(int64_t)a->root};

    for (int i = 0; i < 5; i++) {
        h ^= parts[i];
        h *= 0x100000001b3ULL;
        h ^= h >> 29;
    }
    return (uint32_t)(h ^ (h >> 32));
}

int cohort_coll_has_op(cohort_coll_type_t c)
{
    return c == COHORT_COLL_REDUCE || c == COHORT_COLL_ALLREDUCE || c == COHORT_COLL_REDUCE_SCATTER;
}

int cohort_coll_has_root(cohort_coll_type_t c)
{
    return c == COHORT_COLL_BCAST || c == COHORT_COLL_REDUCE;
}

cohort_status_t cohort_coll_validate(const cohort_comm_t *g, cohort_coll_args_t *a)
{
    const char *name = cohort_coll_names[a->coll];
    cohort_status_t status;

    if (a->coll == COHORT_COLL_BARRIER) {
        return COHORT_OK;
    }
    /* COHORT_IN_PLACE stands for "my input is in rbuf": never a buffer to write into. */
    if (a->rbuf == COHORT_IN_PLACE) {
        cohort_error(g->ctx, "cohort_%s: COHORT_IN_PLACE is not a %s", name,
                     a->coll == COHORT_COLL_BCAST ? "buffer (buf)" : "receive buffer (rbuf)");
        return COHORT_ERR_INVALID_ARG;
    }
    a->esize = cohort_dtype_size(a->dt);
    if (a->esize == 0) {
        cohort_error(g->ctx, "cohort_%s: unknown dtype %d", name, (int)a->dt);
        return COHORT_ERR_INVALID_ARG;
    }
    if (cohort_coll_has_op(a->coll)) {
        status = cohort_reduce_check(a->dt, a->op);
        if (status != COHORT_OK) {
            cohort_error(g->ctx, "cohort_%s: op %d (%s) is not valid for dtype %s", name,
                         (int)a->op, cohort_op_name(a->op), cohort_dtype_name(a->dt));
            return status;
        }
    }
    if (cohort_coll_has_root(a->coll) && (a->root < 0 || a->root >= g->size)) {
        cohort_error(g->ctx, "cohort_%s: root %d is out of range for a group of %d", name, a->root,
                     g->size);
        return COHORT_ERR_INVALID_ARG;
    }
    if (a->count > 0) {
        int rbuf_needed = a->coll != COHORT_COLL_REDUCE || a->root == g->rank;
        if (a->sbuf == NULL && a->coll != COHORT_COLL_BCAST) {
            cohort_error(g->ctx, "cohort_%s: sbuf is NULL with count %zu", name, a->count);
            return COHORT_ERR_INVALID_ARG;
        }
        if (a->rbuf == NULL && rbuf_needed) {
            cohort_error(g->ctx, "cohort_%s: %s is NULL with count %zu", name,
                         a->coll == COHORT_COLL_BCAST ? "buf" : "rbuf", a->count);
            return COHORT_ERR_INVALID_ARG;
        }
        if (a->sbuf == COHORT_IN_PLACE && a->coll == COHORT_COLL_REDUCE && a->root != g->rank) {
            cohort_error(g->ctx, "cohort_reduce: COHORT_IN_PLACE is valid at the root only");
            return COHORT_ERR_INVALID_ARG;
        }
    }
    if (a->count > SIZE_MAX / a->esize / (size_t)g->size) {
        cohort_error(g->ctx, "cohort_%s: count %zu overflows", name, a->count);
        return COHORT_ERR_INVALID_ARG;
    }
    return COHORT_OK;
}

