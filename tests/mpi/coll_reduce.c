/* clang-format off */
/* run: 6 */
/* run: 8 */
/* run: 8 COHORT_ALGO_ALLREDUCE=recursive_doubling COHORT_ALGO_REDUCE_SCATTER=ring */
/* run: 6 COHORT_ALGO_ALLREDUCE=ring COHORT_ALGO_REDUCE_SCATTER=recursive_halving */
/* run: 4 COHORT_CMA=on COHORT_CMA_MIN=1 */
/* run: 4 COHORT_CMA=off */
/* run: 8 --full-only COHORT_ALGO_ALLREDUCE=ring COHORT_ALGO_REDUCE_SCATTER=recursive_halving */
/* run: 6 --full-only COHORT_ALGO_ALLREDUCE=rabenseifner COHORT_ALGO_REDUCE_SCATTER=ring */
/* run: 8 COHORT_ALGO_ALLREDUCE=rabenseifner COHORT_ALGO_REDUCE=knomial */
/* run: 3 COHORT_CHECK=1 COHORT_PROGRESS=block */
/* run: 5 COHORT_ALGO_ALLREDUCE=ring COHORT_ALGO_ALLREDUCE_RING_SEGMENT=4k COHORT_ALGO_ALLREDUCE_RING_WINDOW=1 COHORT_ALGO_REDUCE_SCATTER=ring COHORT_ALGO_REDUCE_SCATTER_RING_SEGMENT=2k COHORT_ALGO_REDUCE_SCATTER_RING_WINDOW=16 */
/* run: 4 COHORT_ALGO_ALLREDUCE=0-1k:recursive_doubling,1k-64k:ring,64k-inf:rabenseifner COHORT_ALGO_ALLREDUCE_RABENSEIFNER_MIN_SEGMENT=1k */
/* run: 4 COHORT_ALGO_ALLREDUCE=direct COHORT_ALGO_REDUCE_SCATTER=direct */
/* run: 3 COHORT_ALGO_ALLREDUCE=direct COHORT_ALGO_REDUCE_SCATTER=direct COHORT_ALGO_ALLREDUCE_DIRECT_CHUNK=4k */
/* run: 4 COHORT_ALGO_ALLREDUCE=cuda_ipc COHORT_ALGO_REDUCE=cuda_ipc COHORT_ALGO_REDUCE_SCATTER=cuda_ipc COHORT_CUDA_IPC=on */
/* run: singleton */
/* runs: together */
/* clang-format on */
/*
 * Reduction collectives (allreduce, reduce, reduce_scatter): every dtype x every valid op x
 * counts 0, 1, 7, 1023 and one past the rendezvous threshold x group shapes (world, reversed,
 * evens, odds, all but the last, three scattered ranks and the rest, each rank alone) x roots,
 * blocking and nonblocking, in place and not, against a reference computed locally: each
 * rank's input is a function of (group rank, element index, call number), so every rank can
 * compute every other rank's. The data is chosen so the exact result is representable and
 * every combination order gives it (integers wrap alike in any order; floats are small
 * integers, or powers of two for PROD), except AVG, checked within two ulps. Then floats with
 * full mantissas, where order matters: allreduce results must be bitwise identical on every
 * rank (shipped to rank 0 and compared) and close to the exact sum. Then a 6 MiB vector (many
 * segments per block), every root of a reduce, several nonblocking requests on one group
 * waited in reverse order, and AVG on integers rejected.
 *
 * Quick mode (the default; TEST_FULL=1 for the whole product, harness.h): the world shape runs
 * the whole matrix, and each other shape a third of it, the calls whose (dtype, op, count,
 * collective) indices sum to its slot modulo 3. Each pair of a shape and a value of one of those
 * dimensions still meets (the other three indices range over more than three sums), and every
 * pair of the other dimensions meets in the world shape. The rounding calls are thinned alike;
 * a reduce visits every root, alternating the sizes, and the 6 MiB vector goes through one
 * collective per shape: at 8 ranks 2,177 calls instead of 5,088 (counted from these loops).
 * Ring with recursive halving at 8 ranks is full mode only: the 6-rank line forces the same
 * pair, and halving's fold at 6 leaves a power-of-two core, the 8-rank case's path.
 * Rabenseifner with the reduce_scatter ring at 6 ranks is full mode only too: the 8-rank
 * rabenseifner line runs it on groups of 8 and 4 (no fold) and of 7, 5 and 3 ("all but the
 * last", "the rest", "three scattered": a fold of 3, 1 and 1 extras, as 6's 2), each group
 * meeting every dtype, op, count and collective; the ring reduce_scatter is forced at 8 (the
 * recursive doubling line) and at 5 (the segment line). It was 7 s of CPU of 73 here.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "harness.h"

#define NDTYPES    10
#define GUARD      64
#define BIG_BYTES  300000 /* above UCX's rendezvous threshold for shared memory */
#define MAXRANKS   64
#define HUGE_BYTES (6 << 20) /* several ring segments per block even at 8 ranks */

static const cohort_dtype_t dtypes[NDTYPES] = {
    COHORT_INT8,   COHORT_UINT8,   COHORT_INT32,    COHORT_UINT32,  COHORT_INT64,
    COHORT_UINT64, COHORT_FLOAT16, COHORT_BFLOAT16, COHORT_FLOAT32, COHORT_FLOAT64};
static const char *const dtype_names[NDTYPES] = {"int8",    "uint8",  "int32",   "uint32",
                                                 "int64",   "uint64", "float16", "bfloat16",
                                                 "float32", "float64"};
static const char *const op_names[] = {"sum", "prod", "min", "max", "avg"};

typedef enum { T_ALLREDUCE, T_REDUCE, T_REDUCE_SCATTER } coll_t;
static const char *const coll_names[] = {"allreduce", "reduce", "reduce_scatter"};

/* ---------------------------------------------------------------------------------------- */
/* Elements                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static size_t dt_size(cohort_dtype_t dt)
{
    static const size_t sizes[NDTYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
    return sizes[dt];
}

static int dt_is_float(cohort_dtype_t dt)
{
    return dt >= COHORT_FLOAT16;
}

static int dt_is_signed(cohort_dtype_t dt)
{
    return dt == COHORT_INT8 || dt == COHORT_INT32 || dt == COHORT_INT64;
}

/* Relative size of one ulp. */
static double dt_eps(cohort_dtype_t dt)
{
    switch (dt) {
    case COHORT_FLOAT16:
        return ldexp(1, -10);
    case COHORT_BFLOAT16:
        return ldexp(1, -7);
    case COHORT_FLOAT32:
        return ldexp(1, -23);
    default:
        return ldexp(1, -52);
    }
}

/* Exactly representable normal values (or zero) only: no rounding needed. */
static uint16_t enc16(double v, int mbits, int bias)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    int e;
    double m;

    if (v == 0) {
        return sign;
    }
    m = frexp(fabs(v), &e); /* |v| = m 2^e, m in [0.5, 1) */
    return (uint16_t)(sign | (uint16_t)((e - 1 + bias) << mbits) |
                      (uint16_t)((m * 2 - 1) * (double)(1 << mbits)));
}

static double dec16(uint16_t h, int mbits, int bias)
{
    int emax = (1 << (15 - mbits)) - 1, e = (h >> mbits) & emax;
    double frac = (double)(h & ((1 << mbits) - 1)), v;

    if (e == emax) {
        v = frac != 0 ? NAN : INFINITY;
    } else if (e == 0) {
        v = ldexp(frac, 1 - bias - mbits);
    } else {
        v = ldexp(frac + (double)(1 << mbits), e - bias - mbits);
    }
    return h & 0x8000 ? -v : v;
}

static void put_f(cohort_dtype_t dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case COHORT_FLOAT16:
        ((uint16_t *)buf)[i] = enc16(v, 10, 15);
        break;
    case COHORT_BFLOAT16:
        ((uint16_t *)buf)[i] = enc16(v, 7, 127);
        break;
    case COHORT_FLOAT32:
        ((float *)buf)[i] = (float)v;
        break;
    default:
        ((double *)buf)[i] = v;
        break;
    }
}

static double get_f(cohort_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case COHORT_FLOAT16:
        return dec16(((const uint16_t *)buf)[i], 10, 15);
    case COHORT_BFLOAT16:
        return dec16(((const uint16_t *)buf)[i], 7, 127);
    case COHORT_FLOAT32:
        return ((const float *)buf)[i];
    default:
        return ((const double *)buf)[i];
    }
}

static void put_i(cohort_dtype_t dt, void *buf, size_t i, uint64_t v)
{
    switch (dt_size(dt)) {
    case 1:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    case 4:
        ((uint32_t *)buf)[i] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)buf)[i] = v;
        break;
    }
}

static uint64_t get_i(cohort_dtype_t dt, const void *buf, size_t i)
{
    switch (dt_size(dt)) {
    case 1:
        return ((const uint8_t *)buf)[i];
    case 4:
        return ((const uint32_t *)buf)[i];
    default:
        return ((const uint64_t *)buf)[i];
    }
}

static uint64_t trunc_i(cohort_dtype_t dt, uint64_t v)
{
    size_t bits = dt_size(dt) * 8;
    return bits == 64 ? v : v & ((UINT64_C(1) << bits) - 1);
}

static int64_t sext_i(cohort_dtype_t dt, uint64_t v)
{
    size_t bits = dt_size(dt) * 8;
    return bits == 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
}

static uint64_t op_i(cohort_dtype_t dt, cohort_op_t op, uint64_t a, uint64_t b)
{
    int less;

    switch (op) {
    case COHORT_SUM:
        return trunc_i(dt, a + b);
    case COHORT_PROD:
        return trunc_i(dt, a * b);
    default:
        less = dt_is_signed(dt) ? sext_i(dt, a) < sext_i(dt, b) : a < b;
        return (op == COHORT_MIN) == less ? a : b;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Inputs and the reference                                                                  */
/* ---------------------------------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t hash(int rank, size_t i, uint32_t salt)
{
    return mix(((uint64_t)salt << 44) ^ ((uint64_t)rank << 36) ^ (uint64_t)i);
}

/* "exact" inputs: any combination order gives the exact result. Otherwise full mantissas,
 * positive, in [0.25, 8): sums round, and their order shows in the bits. */
static double input_f(cohort_dtype_t dt, cohort_op_t op, int exact, int rank, size_t i,
                      uint32_t salt)
{
    static const double pow2[] = {-2, -1, -0.5, 0.5, 1, 2};
    uint64_t x = hash(rank, i, salt);
    int e = (int)((x >> 56) % 5) - 2, mbits;

    if (exact) {
        return op == COHORT_PROD ? pow2[x % 6] : (double)((int)(x % 17) - 8);
    }
    mbits = dt == COHORT_FLOAT16 ? 10 : dt == COHORT_BFLOAT16 ? 7 : dt == COHORT_FLOAT32 ? 23 : 52;
    if (op == COHORT_PROD) {
        e = (int)((x >> 56) % 2) - 1; /* [0.5, 2): eight of them stay in range */
    }
    return ldexp((double)((UINT64_C(1) << mbits) | (x & ((UINT64_C(1) << mbits) - 1))), e - mbits);
}

static void fill_input(cohort_dtype_t dt, cohort_op_t op, int exact, int rank, uint32_t salt,
                       void *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (dt_is_float(dt)) {
            put_f(dt, buf, i, input_f(dt, op, exact, rank, i, salt));
        } else {
            put_i(dt, buf, i, hash(rank, i, salt));
        }
    }
}

/* Element @a i of the result over ranks 0..n-1, and (floats) the sum of magnitudes. */
static double ref_f(cohort_dtype_t dt, cohort_op_t op, int exact, int n, size_t i, uint32_t salt,
                    double *mag)
{
    double r = input_f(dt, op, exact, 0, i, salt);

    *mag = fabs(r);
    for (int k = 1; k < n; k++) {
        double v = input_f(dt, op, exact, k, i, salt);
        *mag += fabs(v);
        switch (op) {
        case COHORT_SUM:
        case COHORT_AVG:
            r += v;
            break;
        case COHORT_PROD:
            r *= v;
            break;
        case COHORT_MIN:
            r = v < r ? v : r;
            break;
        default:
            r = v > r ? v : r;
            break;
        }
    }
    return op == COHORT_AVG ? r / n : r;
}

static uint64_t ref_i(cohort_dtype_t dt, cohort_op_t op, int n, size_t i, uint32_t salt)
{
    uint64_t r = trunc_i(dt, hash(0, i, salt));

    for (int k = 1; k < n; k++) {
        r = op_i(dt, op, r, trunc_i(dt, hash(k, i, salt)));
    }
    return r;
}

/* ---------------------------------------------------------------------------------------- */
/* One collective call                                                                       */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    coll_t c;
    int di; /* index in dtypes */
    cohort_op_t op;
    size_t count;
    int inplace;
    int root;
    int exact;
    uint32_t salt;
    const char *shape;
    char *sbuf, *scopy, *rbuf;
    size_t in_elems; /* elements of this rank's input */
    cohort_request_t *req;
} call_t;

static void call_describe(const call_t *k, const cohort_group_t *g)
{
    fprintf(stderr, "rank %d: %s %s %s count %zu%s root %d on %s (size %d, rank %d), %s data\n",
            test_rank, coll_names[k->c], dtype_names[k->di], op_names[k->op], k->count,
            k->inplace ? " in place" : "", k->root, k->shape, cohort_group_size(g),
            cohort_group_rank(g), k->exact ? "exact" : "rounding");
}

static void call_prepare(call_t *k, cohort_group_t *g)
{
    cohort_dtype_t dt = dtypes[k->di];
    size_t es = dt_size(dt);
    int n = cohort_group_size(g), me = cohort_group_rank(g);
    size_t rbytes;

    k->in_elems = k->c == T_REDUCE_SCATTER ? (size_t)n * k->count : k->count;
    rbytes = (k->inplace ? k->in_elems : k->count) * es + GUARD;
    k->sbuf = malloc(k->in_elems * es + 1);
    k->scopy = malloc(k->in_elems * es + 1);
    k->rbuf = malloc(rbytes);
    CHECK(k->sbuf != NULL && k->scopy != NULL && k->rbuf != NULL);
    fill_input(dt, k->op, k->exact, me, k->salt, k->sbuf, k->in_elems);
    memcpy(k->scopy, k->sbuf, k->in_elems * es);
    memset(k->rbuf, 0xa5, rbytes);
    if (k->inplace) {
        memcpy(k->rbuf, k->sbuf, k->in_elems * es);
    }
    k->req = NULL;
}

static cohort_status_t call_post(call_t *k, cohort_group_t *g, int nonblocking)
{
    cohort_dtype_t dt = dtypes[k->di];
    const void *s = k->inplace ? COHORT_IN_PLACE : k->sbuf;
    int is_root = cohort_group_rank(g) == k->root;
    /* A non-root's rbuf is not significant in a reduce: NULL proves it is left alone. */
    void *r = k->c == T_REDUCE && !is_root ? NULL : k->rbuf;

    switch (k->c) {
    case T_ALLREDUCE:
        return nonblocking ? cohort_iallreduce(g, s, r, k->count, dt, k->op, &k->req)
                           : cohort_allreduce(g, s, r, k->count, dt, k->op);
    case T_REDUCE:
        return nonblocking ? cohort_ireduce(g, s, r, k->count, dt, k->op, k->root, &k->req)
                           : cohort_reduce(g, s, r, k->count, dt, k->op, k->root);
    default:
        return nonblocking ? cohort_ireduce_scatter(g, s, r, k->count, dt, k->op, &k->req)
                           : cohort_reduce_scatter(g, s, r, k->count, dt, k->op);
    }
}

static void call_fail(const call_t *k, const cohort_group_t *g, const char *what, size_t i)
{
    call_describe(k, g);
    fprintf(stderr, "rank %d: %s (element %zu)\n", test_rank, what, i);
    exit(1);
}

static void call_verify(const call_t *k, cohort_group_t *g)
{
    cohort_dtype_t dt = dtypes[k->di];
    size_t es = dt_size(dt), first = 0;
    int n = cohort_group_size(g), me = cohort_group_rank(g);
    const unsigned char *guard;

    if (!k->inplace && memcmp(k->sbuf, k->scopy, k->in_elems * es) != 0) {
        call_fail(k, g, "sbuf was modified", 0);
    }
    if (k->c == T_REDUCE && me != k->root) {
        if (k->inplace) {
            call_fail(k, g, "test bug: in place on a non-root", 0);
        }
        return;
    }
    if (k->c == T_REDUCE_SCATTER) {
        first = (size_t)me * k->count;
    }
    for (size_t i = 0; i < k->count; i++) {
        if (dt_is_float(dt)) {
            double mag, want = ref_f(dt, k->op, k->exact, n, first + i, k->salt, &mag);
            double got = get_f(dt, k->rbuf, i), tol = 0;
            if (!k->exact) {
                /* every partial sum rounded once, at most n - 1 of them in a chain */
                tol = 2 * n * dt_eps(dt) * mag / (k->op == COHORT_AVG ? n : 1);
                if (k->op == COHORT_PROD) {
                    tol = 2 * n * dt_eps(dt) * fabs(want);
                }
            } else if (k->op == COHORT_AVG) {
                tol = 2 * dt_eps(dt) * fabs(want);
            }
            if (!(fabs(got - want) <= tol)) {
                char what[160];
                snprintf(what, sizeof(what), "got %.17g, expected %.17g (tolerance %g)", got, want,
                         tol);
                call_fail(k, g, what, i);
            }
        } else {
            uint64_t want = ref_i(dt, k->op, n, first + i, k->salt), got = get_i(dt, k->rbuf, i);
            if (got != want) {
                char what[160];
                snprintf(what, sizeof(what), "got 0x%llx, expected 0x%llx", (unsigned long long)got,
                         (unsigned long long)want);
                call_fail(k, g, what, i);
            }
        }
    }
    /* Nothing written past the result (in place, the rest of the input may be clobbered). */
    guard = (const unsigned char *)k->rbuf + (k->inplace ? k->in_elems : k->count) * es;
    for (size_t i = 0; i < GUARD; i++) {
        if (guard[i] != 0xa5) {
            call_fail(k, g, "wrote past the end of rbuf", i);
        }
    }
}

/* Allreduce: every rank must hold the same bits. Ship them to group rank 0 and compare. */
static void call_check_identical(const call_t *k, cohort_group_t *g)
{
    size_t bytes = k->count * dt_size(dtypes[k->di]);
    int n = cohort_group_size(g), me = cohort_group_rank(g);

    if (me != 0) {
        CHECK_OK(cohort_send(g, k->rbuf, bytes, COHORT_UINT8, 0, 77));
        return;
    }
    char *other = malloc(bytes + 1);
    CHECK(other != NULL);
    for (int r = 1; r < n; r++) {
        CHECK_OK(cohort_recv(g, other, bytes, COHORT_UINT8, r, 77));
        for (size_t i = 0; i < bytes; i++) {
            if (other[i] != k->rbuf[i]) {
                char what[96];
                snprintf(what, sizeof(what), "group rank %d's result differs from rank 0's", r);
                call_fail(k, g, what, i / dt_size(dtypes[k->di]));
            }
        }
    }
    free(other);
}

static void call_free(call_t *k)
{
    free(k->sbuf);
    free(k->scopy);
    free(k->rbuf);
    k->sbuf = k->scopy = k->rbuf = NULL;
}

static void run_one(call_t *k, cohort_group_t *g)
{
    call_prepare(k, g);
    CHECK_OK(call_post(k, g, k->salt % 2));
    if (k->req != NULL) {
        CHECK_OK(cohort_wait(k->req));
        cohort_request_free(k->req);
    }
    call_verify(k, g);
    if (k->c == T_ALLREDUCE && !k->exact) {
        call_check_identical(k, g);
    }
    call_free(k);
}

/* ---------------------------------------------------------------------------------------- */
/* The matrix                                                                                */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int n;
    int ranks[MAXRANKS];
    cohort_group_t *g;
    uint32_t salt; /* calls made on this group: the same on every member */
    int slot;      /* quick mode: the third of the matrix this shape runs; -1: all of it */
} shape_t;

/* Whether shape @a sh runs the call whose indices sum to @a sum (quick mode: one in three). */
static int shape_runs(const shape_t *sh, int sum)
{
    return sh->slot < 0 || sum % 3 == sh->slot;
}

/* Counts: 0, 1, 7, 1023, and one past the rendezvous threshold (0 when skipped). */
static size_t count_of(int ci, coll_t c, cohort_dtype_t dt, cohort_op_t op)
{
    static const size_t small[] = {0, 1, 7, 1023};

    if (ci < 4) {
        return small[ci];
    }
    /* The big count for every dtype with SUM, for every op on float32: the reference costs
     * size x count on every rank. */
    if (op != COHORT_SUM && dt != COHORT_FLOAT32) {
        return 0;
    }
    /* reduce_scatter: the count is per rank; each block is past the threshold too. */
    return c == T_REDUCE_SCATTER ? BIG_BYTES / 2 / dt_size(dt) : BIG_BYTES / dt_size(dt);
}

static void run_matrix(shape_t *sh)
{
    cohort_group_t *g = sh->g;
    int n = cohort_group_size(g);

    for (int di = 0; di < NDTYPES; di++) {
        cohort_dtype_t dt = dtypes[di];
        for (int op = COHORT_SUM; op <= COHORT_AVG; op++) {
            if (op == COHORT_AVG && !dt_is_float(dt)) {
                continue;
            }
            for (int ci = 0; ci < 5; ci++) {
                for (int c = T_ALLREDUCE; c <= T_REDUCE_SCATTER; c++) {
                    size_t count = count_of(ci, (coll_t)c, dt, (cohort_op_t)op);
                    call_t k = {.c = (coll_t)c,
                                .di = di,
                                .op = (cohort_op_t)op,
                                .count = count,
                                .exact = 1,
                                .shape = sh->name};
                    if ((ci == 4 && count == 0) || !shape_runs(sh, di + op + ci + c)) {
                        continue;
                    }
                    k.salt = sh->salt++;
                    k.root = (int)(k.salt % (uint32_t)n);
                    /* In place or not alternately: each (collective, dtype, count) and each
                     * (collective, op, count) meets both. In place is a reduce root's alone. */
                    k.inplace = (di + op + ci) % 2;
                    if (c == T_REDUCE && cohort_group_rank(g) != k.root) {
                        k.inplace = 0;
                    }
                    run_one(&k, g);
                }
            }
        }
    }
}

/* Rounding data: allreduce bitwise identical everywhere, every float type; the big count for
 * allreduce SUM and AVG only (what the identity is about), to keep the reference affordable. */
static void run_rounding(shape_t *sh)
{
    cohort_group_t *g = sh->g;
    static const cohort_op_t ops[] = {COHORT_SUM, COHORT_AVG, COHORT_PROD};

    for (int di = 6; di < NDTYPES; di++) {
        for (int oi = 0; oi < 3; oi++) {
            for (int c = T_ALLREDUCE; c <= T_REDUCE_SCATTER; c++) {
                for (int big = 0; big < 2; big++) {
                    call_t k = {.c = (coll_t)c, .di = di, .op = ops[oi], .shape = sh->name};
                    if ((big && (c != T_ALLREDUCE || ops[oi] == COHORT_PROD)) ||
                        !shape_runs(sh, di + oi + c + big)) {
                        continue;
                    }
                    k.salt = sh->salt++;
                    k.count = big ? count_of(4, (coll_t)c, dtypes[di], COHORT_SUM) : 1023;
                    k.inplace = (int)(k.salt / 2 % 2);
                    k.root = (int)(k.salt % (uint32_t)cohort_group_size(g));
                    if (c == T_REDUCE && cohort_group_rank(g) != k.root) {
                        k.inplace = 0;
                    }
                    run_one(&k, g);
                }
            }
        }
    }
}

/* One vector large enough that every algorithm cuts its blocks into several segments and its
 * window of transfers wraps around; then every root of a reduce, both sizes. */
static void run_large_and_roots(shape_t *sh)
{
    cohort_group_t *g = sh->g;
    int n = cohort_group_size(g);

    for (int c = T_ALLREDUCE; c <= T_REDUCE_SCATTER; c++) {
        call_t k = {.c = (coll_t)c, .di = 8, .op = COHORT_SUM, .exact = 1, .shape = sh->name};
        if (!shape_runs(sh, c)) {
            continue;
        }
        k.salt = sh->salt++;
        k.count = c == T_REDUCE_SCATTER ? HUGE_BYTES / 4 / (size_t)n : HUGE_BYTES / 4;
        k.root = n - 1;
        k.inplace = c != T_REDUCE || cohort_group_rank(g) == k.root;
        run_one(&k, g);
    }
    for (int root = 0; root < n; root++) {
        for (int big = 0; big < 2; big++) {
            if (sh->slot >= 0 && (root + big + sh->slot) % 2 != 0) {
                continue; /* quick: every root, one size each, the sizes alternating */
            }
            call_t k = {.c = T_REDUCE,
                        .di = 8,
                        .op = COHORT_SUM,
                        .exact = 1,
                        .root = root,
                        .salt = sh->salt++,
                        .shape = sh->name};
            k.count = big ? BIG_BYTES / 4 : 1023;
            k.inplace = cohort_group_rank(g) == root && (k.salt % 2);
            run_one(&k, g);
        }
    }
}

/* Several requests outstanding on one group, completed in reverse order. */
static void run_nonblocking(shape_t *sh)
{
    cohort_group_t *g = sh->g;
    enum { NCALLS = 9 };
    call_t k[NCALLS];
    int n = cohort_group_size(g), me = cohort_group_rank(g);

    for (int i = 0; i < NCALLS; i++) {
        static const int dis[NCALLS] = {8, 0, 9, 6, 4, 7, 2, 8, 5};
        static const size_t counts[NCALLS] = {1, 1023, 7, 0, 40000, 1023, 7, 75000, 100};
        coll_t c = i < 4 ? T_ALLREDUCE : (coll_t)(i % 3);
        memset(&k[i], 0, sizeof(k[i]));
        k[i].c = c;
        k[i].di = dis[i];
        k[i].op = dt_is_float(dtypes[dis[i]]) ? (cohort_op_t)(i % 5) : (cohort_op_t)(i % 4);
        k[i].count = counts[i];
        k[i].exact = 1;
        k[i].salt = sh->salt++;
        k[i].root = (int)(k[i].salt % (uint32_t)n);
        k[i].inplace = (i % 2) && (c != T_REDUCE || me == k[i].root);
        k[i].shape = sh->name;
        call_prepare(&k[i], g);
        CHECK_OK(call_post(&k[i], g, 1));
    }
    for (int i = NCALLS - 1; i >= 0; i--) {
        CHECK_OK(cohort_wait(k[i].req));
        cohort_request_free(k[i].req);
    }
    for (int i = 0; i < NCALLS; i++) {
        call_verify(&k[i], g);
        call_free(&k[i]);
    }
}

static void check_avg_on_integers(cohort_group_t *g)
{
    int32_t in[4] = {1, 2, 3, 4}, out[4 * MAXRANKS];
    cohort_request_t *req = NULL;

    for (int di = 0; di < 6; di += 2) {
        cohort_dtype_t dt = dtypes[di];
        CHECK_STATUS(cohort_allreduce(g, in, out, 1, dt, COHORT_AVG), COHORT_ERR_INVALID_ARG);
        CHECK_STATUS(cohort_reduce(g, in, out, 1, dt, COHORT_AVG, 0), COHORT_ERR_INVALID_ARG);
        CHECK_STATUS(cohort_reduce_scatter(g, in, out, 1, dt, COHORT_AVG), COHORT_ERR_INVALID_ARG);
        CHECK_STATUS(cohort_iallreduce(g, in, out, 1, dt, COHORT_AVG, &req),
                     COHORT_ERR_INVALID_ARG);
        CHECK(req == NULL);
    }
}

static int one_configuration(void)
{
    cohort_context_t *ctx = test_init();
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    shape_t shapes[8];
    int ns = 0;

    CHECK(n <= MAXRANKS);
    memset(shapes, 0, sizeof(shapes));
    shapes[ns].name = "world";
    shapes[ns].g = cohort_world(ctx);
    shapes[ns++].n = n;
    if (n > 1) {
        shapes[ns].name = "reversed";
        for (int i = 0; i < n; i++) {
            shapes[ns].ranks[shapes[ns].n++] = n - 1 - i;
        }
        ns++;
        shapes[ns].name = "evens";
        for (int i = 0; i < n; i += 2) {
            shapes[ns].ranks[shapes[ns].n++] = i;
        }
        ns++;
        shapes[ns].name = "odds";
        for (int i = 1; i < n; i += 2) {
            shapes[ns].ranks[shapes[ns].n++] = i;
        }
        ns++;
        shapes[ns].name = "all but the last";
        for (int i = 0; i < n - 1; i++) {
            shapes[ns].ranks[shapes[ns].n++] = i;
        }
        ns++;
    }
    if (n >= 4) {
        shapes[ns].name = "three scattered";
        shapes[ns].ranks[0] = n - 1;
        shapes[ns].ranks[1] = 1;
        shapes[ns].ranks[2] = n / 2;
        shapes[ns++].n = 3;
        /* the others meanwhile, so that nobody idles */
        shapes[ns].name = "the rest";
        for (int i = n - 2; i >= 0; i--) {
            if (i != 1 && i != n / 2) {
                shapes[ns].ranks[shapes[ns].n++] = i;
            }
        }
        ns++;
    }
    shapes[ns].name = "alone";
    shapes[ns].ranks[0] = me;
    shapes[ns++].n = 1;
    for (int s = 1; s < ns; s++) {
        cohort_status_t st =
            cohort_group_create(ctx, shapes[s].name, shapes[s].ranks, shapes[s].n, &shapes[s].g);
        CHECK(st == COHORT_OK || (st == COHORT_ERR_NOT_MEMBER && shapes[s].g == NULL));
    }
    for (int s = 0; s < ns; s++) {
        shapes[s].slot = s == 0 || test_full() ? -1 : s % 3;
    }

    check_avg_on_integers(cohort_world(ctx));
    for (int s = 0; s < ns; s++) {
        if (shapes[s].g == NULL) {
            continue;
        }
        run_matrix(&shapes[s]);
        run_rounding(&shapes[s]);
        run_large_and_roots(&shapes[s]);
        run_nonblocking(&shapes[s]);
    }
    for (int s = 1; s < ns; s++) {
        CHECK_OK(cohort_group_free(shapes[s].g));
    }
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    test_finish(ctx, "coll_reduce");
    return 0;
}

int main(void)
{
    return test_configs(one_configuration);
}
