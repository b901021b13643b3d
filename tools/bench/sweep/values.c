/*
 * cohort_bench <collective>, the value model and the check: every element a small integer, a
 * function of (rank, index), so that sums in any order are exact and every result has a
 * reference computed here (--check).
 */
#include "sweep.h"

/* Elements are read and written by their type's width and kind (the table's size, is_float,
 * is_signed), through memcpy, so that one path serves every type; the 16-bit floats go through
 * the library's conversions. Every value is a small integer (|v| < cap): exact in each type. */
static int bench_is_half(const bench_dtype_t *t)
{
    return t->dt == COHORT_FLOAT16 || t->dt == COHORT_BFLOAT16;
}

static void bench_store(const bench_dtype_t *t, void *buf, size_t i, double v)
{
    unsigned char *p = (unsigned char *)buf + i * t->size;
    /* An integer's low bytes: conversion to an unsigned type keeps its two's complement. */
    uint64_t u64 = (uint64_t)(int64_t)v;
    uint32_t u32 = (uint32_t)u64;
    uint16_t u16 = 0;
    uint8_t u8 = (uint8_t)u64;
    float f = (float)v;
    const void *src = t->size == 1 ? (const void *)&u8 : t->size == 4 ? (const void *)&u32 : &u64;

    if (bench_is_half(t)) {
        u16 = t->dt == COHORT_FLOAT16 ? cohort_float_to_float16(f) : cohort_float_to_bfloat16(f);
        src = &u16;
    } else if (t->is_float) {
        src = t->size == sizeof(f) ? (const void *)&f : (const void *)&v;
    }
    memcpy(p, src, t->size);
}

static double bench_load(const bench_dtype_t *t, const void *buf, size_t i)
{
    const unsigned char *p = (const unsigned char *)buf + i * t->size;
    unsigned bits = (unsigned)t->size * 8;
    uint64_t u;
    uint32_t u32;
    uint16_t h;
    uint8_t u8;
    float f;
    double d;

    if (bench_is_half(t)) {
        memcpy(&h, p, sizeof(h));
        return t->dt == COHORT_FLOAT16 ? cohort_float16_to_float(h) : cohort_bfloat16_to_float(h);
    }
    if (t->is_float) {
        memcpy(t->size == sizeof(f) ? (void *)&f : (void *)&d, p, t->size);
        return t->size == sizeof(f) ? (double)f : d;
    }
    /* An integer's bytes as the unsigned type of its width holds them, then its sign carried
     * up from its top bit. */
    if (t->size == 1) {
        memcpy(&u8, p, 1);
        u = u8;
    } else if (t->size == 4) {
        memcpy(&u32, p, 4);
        u = u32;
    } else {
        memcpy(&u, p, 8);
    }
    if (t->is_signed && bits < 64 && (u >> (bits - 1)) & 1) {
        u |= ~0ULL << bits;
    }
    return t->is_signed ? (double)(int64_t)u : (double)u;
}

/* Rank r's element j: depends on both, so a misplaced block shows. */
static double bench_value(const bench_t *b, int r, size_t j)
{
    uint64_t h = ((uint64_t)r << 40) ^ (uint64_t)j;
    double v;

    if (bench_colls[b->coll].has_op && (b->op == COHORT_PROD || b->vsparse)) {
        if (((size_t)r + j) % (size_t)b->run.n != 0) {
            return b->op == COHORT_PROD ? 1 : 0;
        }
        return (double)(1 + j % 3);
    }
    h = (h ^ (h >> 31)) * 0x7fb5d329728ea185ULL;
    h = (h ^ (h >> 27)) * 0x81dadef4bc2dd44dULL;
    v = (double)((h ^ (h >> 33)) % (uint64_t)b->vmod);
    return b->dt->is_signed ? v - (double)((uint64_t)b->vmod / 2) : v;
}

static double bench_reduced(const bench_t *b, cohort_op_t op, size_t j)
{
    double acc = bench_value(b, 0, j), v;

    for (int r = 1; r < b->run.n; r++) {
        v = bench_value(b, r, j);
        acc = op == COHORT_PROD  ? acc * v
              : op == COHORT_MIN ? (v < acc ? v : acc)
              : op == COHORT_MAX ? (v > acc ? v : acc)
                                 : acc + v;
    }
    return op == COHORT_AVG ? acc / b->run.n : acc;
}

/* The expected value of rbuf[j]; 0 when rbuf is not checked here (reduce off the root). */
static int bench_expected(const bench_t *b, cohort_op_t op, size_t j, double *out)
{
    size_t peer = b->count > 0 ? j / b->count : 0, i = b->count > 0 ? j % b->count : 0;

    switch (b->coll) {
    case BENCH_BCAST:
        *out = bench_value(b, (int)b->root, j);
        return 1;
    case BENCH_REDUCE:
        if (b->run.rank != b->root) {
            return 0;
        }
        *out = bench_reduced(b, op, j);
        return 1;
    case BENCH_ALLREDUCE:
        *out = bench_reduced(b, op, j);
        return 1;
    case BENCH_ALLGATHER:
        *out = bench_value(b, (int)peer, i);
        return 1;
    case BENCH_REDUCE_SCATTER:
        *out = bench_reduced(b, op, (size_t)b->run.rank * b->count + j);
        return 1;
    case BENCH_ALLTOALL:
        *out = bench_value(b, (int)peer, (size_t)b->run.rank * b->count + i);
        return 1;
    default:
        return 0;
    }
}

/* Device buffers (--mem cuda) are written and read through their host views. */
static void bench_copy(const bench_t *b, void *dst, const void *src, size_t bytes)
{
    if (b->mem_cuda && bytes > 0 &&
        b->cu.memcpy_any(dst, src, bytes, BENCH_CUDA_MEMCPY_DEFAULT) != 0) {
        fprintf(stderr, "cohort_bench: rank %d: cudaMemcpy of %zu bytes failed\n", b->run.rank,
                bytes);
        exit(1);
    }
}

void bench_fill(bench_t *b)
{
    size_t es = b->dt->size;

    for (size_t j = 0; j < b->sbytes / es; j++) {
        bench_store(b->dt, b->hsbuf, j, bench_value(b, b->run.rank, j));
    }
    memset(b->hrbuf, BENCH_SENTINEL, b->rbytes);
    if (b->coll == BENCH_BCAST && b->run.rank == b->root) {
        for (size_t j = 0; j < b->rbytes / es; j++) {
            bench_store(b->dt, b->hrbuf, j, bench_value(b, b->run.rank, j));
        }
    }
    bench_copy(b, b->sbuf, b->hsbuf, b->sbytes);
    bench_copy(b, b->rbuf, b->hrbuf, b->rbytes);
}

/* @return the number of wrong elements in rbuf (the first few printed). */
static long bench_verify(const bench_t *b, const char *lib, cohort_op_t op)
{
    double want, got, tol = op == COHORT_AVG ? b->dt->avg_tol : 0, diff;
    long wrong = 0;

    bench_copy(b, b->hrbuf, b->rbuf, b->rbytes);
    for (size_t j = 0; j < b->rbytes / b->dt->size; j++) {
        if (!bench_expected(b, op, j, &want)) {
            break;
        }
        got = bench_load(b->dt, b->hrbuf, j);
        diff = got > want ? got - want : want - got;
        if (!(diff <= tol * (want > 1 || want < -1 ? (want < 0 ? -want : want) : 1))) {
            if (wrong++ < BENCH_MISMATCHES) {
                fprintf(stderr,
                        "cohort_bench: rank %d: %s %s, %zu bytes: element %zu is %g, expected "
                        "%g\n",
                        b->run.rank, lib, bench_colls[b->coll].name, b->bytes, j, got, want);
            }
        }
    }
    return wrong;
}

/* Each library once, against the reference; all ranks learn whether any was wrong. */
int bench_check(bench_t *b)
{
    double wrong[2] = {0, 0};
    cohort_status_t st;

    if (b->coll == BENCH_BARRIER) {
        return 0;
    }
    bench_fill(b);
    st = bench_cohort_call(b);
    if (st != COHORT_OK) {
        return bench_fail(b, bench_colls[b->coll].name, st);
    }
    wrong[0] = (double)bench_verify(b, "cohort", b->op);
#ifdef BENCH_WITH_MPI
    if (bench_mpi_usable(b)) {
        bench_fill(b);
        bench_mpi_call(b);
        wrong[1] = (double)bench_verify(b, "MPI", b->op == COHORT_AVG ? COHORT_SUM : b->op);
    }
#endif
    if (bench_allmax(b, wrong, 2) != 0) {
        return 1;
    }
    if (wrong[0] > 0 || wrong[1] > 0) {
        if (b->run.rank == 0) {
            fprintf(stderr, "cohort_bench: %s at %zu bytes: wrong results from %s\n",
                    bench_colls[b->coll].name, b->bytes,
                    wrong[0] > 0 && wrong[1] > 0 ? "cohort and MPI"
                    : wrong[0] > 0               ? "cohort"
                                                 : "MPI");
        }
        return 1;
    }
    return 0;
}
