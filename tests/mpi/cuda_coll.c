/* clang-format off */
/* run: 2 */
/* run: 4 COHORT_CUDA_IPC_MIN=65536 */
/* run: 3 COHORT_CUDA_IPC=off */
/* run: 2 COHORT_CUDA_IPC=on */
/* run: 3 COHORT_CUDA_IPC=on COHORT_CUDA_IPC_CACHE=0 */
/* run: 4 COHORT_CUDA_IPC=on */
/* run: 4 COHORT_ALGO_ALLREDUCE=ring COHORT_ALGO_REDUCE_SCATTER=recursive_halving COHORT_ALGO_ALLGATHER=bruck */
/* run: 3 CUDA_COLL_VOTE=1 COHORT_CHECK=1 */
/* run: singleton */
/* runs: together */
/* clang-format on */
/*
 * Every collective with CUDA buffers: each case runs with host buffers and then with device
 * buffers, device send + host receive, host send + device receive, managed memory, and in
 * place on the device; every result must be bitwise the reference each rank computes locally
 * from every rank's (regenerated) input, the data chosen so that the order of combination does
 * not matter. Every dtype x valid op x a
 * few counts (one past the rendezvous threshold), every root; then point-to-point with device
 * buffers. Ranks may share one GPU (device = local rank % devices). Quick mode (the default:
 * harness.h's test_full()) runs one count per (collective, dtype, op), a different one as the
 * dtype or the op changes, so every count meets every dtype and every op; TEST_FULL=1 runs
 * every count of every (dtype, op).
 *
 * CUDA_COLL_ONLY=<name>[,<name>...] runs those collectives only (to look at one path by hand;
 * tests/gpu/fake_check.sh: the IPC collectives when a rank cannot map the others' memory).
 *
 * Without a device the test prints "SKIP: no CUDA device (...)" and exits 77; before that it
 * checks that the no-device answer is a status, not a failure, and that host buffers work.
 *
 * The run lines of one rank count share one mpirun (runs: together; harness.h's test_configs:
 * a context per configuration), the fake scripts' (tests/gpu/fake_check.sh) too. What a CUDA
 * process keeps for its life is not a configuration's to change: the module's device count
 * (src/reduce/cuda/module.c counts once per process, as CUDA reads CUDA_VISIBLE_DEVICES once),
 * so a run that shows a rank no device runs in a process of its own; and the module, loaded
 * per path and never unloaded (src/mem/gpu.c), so the runs over the real module and those over
 * the host-loop one (another COHORT_PLUGIN_PATH) are in separate scripts, never one process.
 */
#include <stdint.h>
#include <string.h>
#include "harness.h"
#include "../../tools/bench/cudart.h"

static const cohort_dtype_t dtypes[] = {
    COHORT_INT8,   COHORT_UINT8,   COHORT_INT32,    COHORT_UINT32,  COHORT_INT64,
    COHORT_UINT64, COHORT_FLOAT16, COHORT_BFLOAT16, COHORT_FLOAT32, COHORT_FLOAT64,
};
static const cohort_op_t ops[] = {COHORT_SUM, COHORT_PROD, COHORT_MIN, COHORT_MAX, COHORT_AVG};
static const size_t counts[] = {1, 7, 1023, 40000};

typedef enum { PLACE_DD, PLACE_HD, PLACE_DH, PLACE_MM, PLACE_INPLACE, PLACE_LAST } place_t;
static const char *const place_names[] = {"device", "host->device", "device->host", "managed",
                                          "device in place"};

static bench_cudart_t cu;
static int nranks, me;

static size_t esize(cohort_dtype_t dt)
{
    switch (dt) {
    case COHORT_INT8:
    case COHORT_UINT8:
        return 1;
    case COHORT_FLOAT16:
    case COHORT_BFLOAT16:
        return 2;
    case COHORT_INT32:
    case COHORT_UINT32:
    case COHORT_FLOAT32:
        return 4;
    default:
        return 8;
    }
}

static int is_float(cohort_dtype_t dt)
{
    return dt == COHORT_FLOAT16 || dt == COHORT_BFLOAT16 || dt == COHORT_FLOAT32 ||
           dt == COHORT_FLOAT64;
}

/* Rank r's input: any bits for integers; for floats one of 0, +-1 and +-2 (so no NaN, whose
 * payload a reduction may take from either operand), by its encoding: sums and products of
 * them are exact in every float type up to 15 ranks (float16 holds 2^15), so every combination
 * order gives the reference's bits. With -3..3, an 8-rank product of float16 (3^8 is past
 * 2048) or a 6-rank one of bfloat16 rounded, and the host path's order differed from the
 * reference's (seen at 8 ranks). */
static void fill(void *buf, size_t n, cohort_dtype_t dt, int r, unsigned salt)
{
    size_t es = esize(dt);
    uint64_t small[7] = {0};

    static const float values[7] = {-2, -1, 0, 1, 2, -1, 1};

    for (int v = 0; v < 7 && is_float(dt); v++) {
        float f = values[v];
        double d = f;
        uint16_t h =
            dt == COHORT_FLOAT16 ? cohort_float_to_float16(f) : cohort_float_to_bfloat16(f);
        small[v] = 0;
        memcpy(&small[v],
               dt == COHORT_FLOAT64 ? (void *)&d
               : es == 4            ? (void *)&f
                                    : (void *)&h,
               es);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = (uint64_t)(i * 2654435761u) ^ (uint64_t)(r * 40503u) ^ salt;
        uint64_t bits = is_float(dt) ? small[h % 7] : h * 0x9e3779b97f4a7c15ULL;
        memcpy((char *)buf + i * es, &bits, es); /* little-endian: the low bytes */
    }
}

/* Element i of @a buf as raw bits, and back. */
static uint64_t get_bits(const void *buf, size_t i, size_t es)
{
    uint64_t v = 0;

    memcpy(&v, (const char *)buf + i * es, es);
    return v;
}

static void put_bits(void *buf, size_t i, size_t es, uint64_t v)
{
    memcpy((char *)buf + i * es, &v, es);
}

static double to_double(cohort_dtype_t dt, uint64_t v)
{
    float f;
    double d;

    switch (dt) {
    case COHORT_FLOAT16:
        return cohort_float16_to_float((uint16_t)v);
    case COHORT_BFLOAT16:
        return cohort_bfloat16_to_float((uint16_t)v);
    case COHORT_FLOAT32:
        memcpy(&f, &v, 4);
        return f;
    default:
        memcpy(&d, &v, 8);
        return d;
    }
}

static uint64_t from_double(cohort_dtype_t dt, double x)
{
    uint64_t v = 0;
    float f = (float)x;

    switch (dt) {
    case COHORT_FLOAT16:
        return cohort_float_to_float16(f);
    case COHORT_BFLOAT16:
        return cohort_float_to_bfloat16(f);
    case COHORT_FLOAT32:
        memcpy(&v, &f, 4);
        return v;
    default:
        memcpy(&v, &x, 8);
        return v;
    }
}

/* a op b for one element, as the library must compute it. The test's data make the result
 * independent of the order of combination (small integers for floats; integers wrap alike in
 * any order), so one reference serves every algorithm. AVG divides at the end (ref_finish). */
static uint64_t ref_op(cohort_dtype_t dt, cohort_op_t op, uint64_t a, uint64_t b)
{
    size_t es = esize(dt);
    int sh = 64 - 8 * (int)es;
    int is_signed = dt == COHORT_INT8 || dt == COHORT_INT32 || dt == COHORT_INT64;
    int64_t sa = (int64_t)(a << sh) >> sh, sb = (int64_t)(b << sh) >> sh;
    int less = is_signed ? sa < sb : a < b;

    if (is_float(dt)) {
        double x = to_double(dt, a), y = to_double(dt, b);
        return from_double(dt, op == COHORT_PROD  ? x * y
                               : op == COHORT_MIN ? (x < y ? x : y)
                               : op == COHORT_MAX ? (x > y ? x : y)
                                                  : x + y);
    }
    switch (op) {
    case COHORT_PROD:
        return a * b;
    case COHORT_MIN:
        return less ? a : b;
    case COHORT_MAX:
        return less ? b : a;
    default:
        return a + b;
    }
}

/* The result every member must get, computed locally from every member's input (each
 * regenerated by fill): the reference for every placement and path, IPC included. */
static void reference(int c, cohort_dtype_t dt, cohort_op_t op, size_t n, int root, size_t sfac,
                      unsigned salt, char *ref)
{
    size_t es = esize(dt), len = n * sfac;
    char *in = malloc(len * es * (size_t)nranks);

    CHECK(in != NULL);
    for (int r = 0; r < nranks; r++) {
        fill(in + (size_t)r * len * es, len, dt, r, salt);
    }
    switch (c) {
    case 0: /* bcast */
        memcpy(ref, in + (size_t)root * len * es, len * es);
        break;
    case 3: /* allgather */
        memcpy(ref, in, len * es * (size_t)nranks);
        break;
    case 5: /* alltoall: block k from rank k's block me */
        for (int k = 0; k < nranks; k++) {
            memcpy(ref + (size_t)k * n * es, in + ((size_t)k * len + (size_t)me * n) * es, n * es);
        }
        break;
    default: { /* reduce, allreduce: n elements; reduce_scatter: block me of each input */
        size_t off = c == 4 ? (size_t)me * n : 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t acc = get_bits(in, off + i, es);
            for (int r = 1; r < nranks; r++) {
                acc = ref_op(dt, op, acc, get_bits(in + (size_t)r * len * es, off + i, es));
            }
            if (op == COHORT_AVG) {
                acc = from_double(dt, to_double(dt, acc) / nranks);
            }
            put_bits(ref, i, es, acc);
        }
        break;
    }
    }
    free(in);
}

typedef struct {
    const char *name;
    int has_op, has_root, in_place;
    size_t sfac, rfac; /* send and receive sizes, in counts: 1 or the group size */
} coll_t;

/* Whether @a name is one of the comma-separated names of @a list. */
static int listed(const char *list, const char *name)
{
    size_t len = strlen(name);

    for (const char *p = list; p != NULL; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\0')) {
            return 1;
        }
    }
    return 0;
}

static cohort_status_t run(int c, cohort_group_t *g, const void *s, void *r, size_t n,
                           cohort_dtype_t dt, cohort_op_t op, int root)
{
    switch (c) {
    case 0:
        return cohort_bcast(g, r, n, dt, root);
    case 1:
        return cohort_reduce(g, s, r, n, dt, op, root);
    case 2:
        return cohort_allreduce(g, s, r, n, dt, op);
    case 3:
        return cohort_allgather(g, s, r, n, dt);
    case 4:
        return cohort_reduce_scatter(g, s, r, n, dt, op);
    default:
        return cohort_alltoall(g, s, r, n, dt);
    }
}

static void *dev_alloc(size_t bytes, int managed)
{
    void *p = NULL;

    if (managed) {
        CHECK(cu.malloc_managed(&p, bytes, 1) == 0);
    } else {
        CHECK(cu.malloc_device(&p, bytes) == 0);
    }
    return p;
}

static void to_dev(void *d, const void *h, size_t bytes)
{
    CHECK(cu.memcpy_any(d, h, bytes, BENCH_CUDA_MEMCPY_DEFAULT) == 0);
}

static void from_dev(void *h, const void *d, size_t bytes)
{
    CHECK(cu.memcpy_any(h, d, bytes, BENCH_CUDA_MEMCPY_DEFAULT) == 0);
}

/* One (collective, dtype, op, count, root) case in every placement. */
static int one_case(cohort_group_t *g, const coll_t *co, int c, cohort_dtype_t dt, cohort_op_t op,
                    size_t n, int root)
{
    size_t es = esize(dt), sbytes = n * es * co->sfac, rbytes = n * es * co->rfac;
    int writes_r = !(c == 1 && me != root);
    char *hin = malloc(sbytes), *ref = calloc(1, rbytes), *got = malloc(rbytes);
    char *rin = malloc(rbytes > sbytes ? rbytes : sbytes);
    int checked = 0;

    CHECK(hin && ref && got && rin);
    unsigned salt = (unsigned)(c * 131 + (int)dt * 17 + (int)op);

    fill(hin, n * co->sfac, dt, me, salt);
    reference(c, dt, op, n, root, co->sfac, salt, ref);
    /* The host path agrees with the reference (host buffers; under COHORT_CUDA_IPC=on they go
     * through the IPC path, staged into device scratch). */
    memcpy(got, hin, c == 0 ? rbytes : 0);
    CHECK_OK(run(c, g, hin, got, n, dt, op, root));
    CHECK(!writes_r || memcmp(got, ref, c == 4 ? n * es : rbytes) == 0);
    for (int p = 0; p < PLACE_LAST; p++) {
        void *ds = NULL, *dr = NULL;
        const void *s;
        void *r;
        if (p == PLACE_INPLACE && !co->in_place) {
            continue;
        }
        ds = p == PLACE_HD ? NULL : dev_alloc(sbytes, p == PLACE_MM);
        /* in place, reduce_scatter's rbuf holds the whole input */
        dr = p == PLACE_DH ? NULL : dev_alloc(rbytes > sbytes ? rbytes : sbytes, p == PLACE_MM);
        if (ds != NULL) {
            to_dev(ds, hin, sbytes);
        }
        memset(got, 0x5a, rbytes);
        if (dr != NULL) {
            to_dev(dr, got, rbytes);
        }
        s = ds != NULL ? ds : hin;
        r = dr != NULL ? dr : got;
        if (c == 0) {
            /* bcast has one buffer: the device one (host->device is the same case) */
            if (p == PLACE_HD || p == PLACE_DH) {
                goto next;
            }
            to_dev(dr, hin, rbytes);
        }
        /* Only the root of a reduce may pass COHORT_IN_PLACE; the others pass their input. */
        if (p == PLACE_INPLACE && !(c == 1 && me != root)) {
            /* the input where COHORT_IN_PLACE says it is */
            memset(rin, 0, rbytes);
            if (c == 3) {
                memcpy(rin + (size_t)me * n * es, hin, n * es);
            } else {
                memcpy(rin, hin, sbytes);
            }
            to_dev(dr, rin, rbytes > sbytes ? rbytes : sbytes);
            s = COHORT_IN_PLACE;
        }
        CHECK_OK(run(c, g, s, r, n, dt, op, root));
        if (dr != NULL) {
            from_dev(got, dr, rbytes);
        }
        if (writes_r) {
            size_t cmp = c == 4 ? n * es : rbytes;
            if (memcmp(got, ref, cmp) != 0) {
                size_t i = 0;
                while (i < cmp && got[i] == ref[i]) {
                    i++;
                }
                fprintf(stderr,
                        "rank %d: %s dtype %d op %d count %zu root %d with %s buffers: byte %zu "
                        "differs from the reference (0x%02x, want 0x%02x)%s%s\n",
                        me, co->name, (int)dt, co->has_op ? (int)op : -1, n, root, place_names[p],
                        i, (unsigned char)got[i], (unsigned char)ref[i],
                        test_config[0] ? " under " : "", test_config);
                exit(1);
            }
        }
        checked++;
    next:
        if (ds != NULL) {
            cu.free_device(ds);
        }
        if (dr != NULL) {
            cu.free_device(dr);
        }
    }
    free(hin);
    free(ref);
    free(got);
    free(rin);
    return checked;
}

static void test_p2p(cohort_context_t *ctx, cohort_group_t *w)
{
    size_t n = 300000; /* rendezvous-sized */
    uint32_t *h = malloc(n * 4), *back = malloc(n * 4);
    void *d = dev_alloc(n * 4, 0), *d2 = dev_alloc(n * 4, 0);
    int right = (me + 1) % nranks, left = (me + nranks - 1) % nranks;
    const char *mode = getenv("COHORT_CUDA_IPC"), *fail_env = getenv("FAKE_CUDA_IPC_FAIL_RANK");
    int fail = fail_env != NULL ? atoi(fail_env) : -1, ipc_p2p;
    cohort_request_t *rq[2];
    cohort_stats_t st0, st1;
    cohort_node_info_t node;

    CHECK_OK(cohort_node_info(ctx, right, &node));
    ipc_p2p = right != me && node.same_node && (mode == NULL || strcmp(mode, "off") != 0);

    CHECK(h && back);
    for (size_t i = 0; i < n; i++) {
        h[i] = (uint32_t)(me * 1000003u + i);
    }
    to_dev(d, h, n * 4);
    CHECK_OK(cohort_stats(ctx, &st0));
    CHECK_OK(cohort_irecv(w, d2, n, COHORT_UINT32, left, 5, &rq[0]));
    CHECK_OK(cohort_isend(w, d, n, COHORT_UINT32, right, 5, &rq[1]));
    CHECK_OK(cohort_wait(rq[0]));
    CHECK_OK(cohort_wait(rq[1]));
    cohort_request_free(rq[0]);
    cohort_request_free(rq[1]);
    /* The receive went through a bounce buffer; the send too unless its peer is on this node
     * (and IPC not off): then the receiver copied it out through CUDA IPC, or, where the
     * receiver could not map it (FAKE_CUDA_IPC_FAIL_RANK), it went staged after all. */
    CHECK_OK(cohort_stats(ctx, &st1));
    CHECK(st1.cuda_staged_xfers - st0.cuda_staged_xfers == (ipc_p2p ? 1u + (right == fail) : 2u));
    from_dev(back, d2, n * 4);
    for (size_t i = 0; i < n; i++) {
        CHECK(back[i] == (uint32_t)(left * 1000003u + i));
    }
    /* host send, device receive, blocking: pairs (2k, 2k + 1); an odd last rank sits out */
    if (me % 2 == 0 && me + 1 < nranks) {
        CHECK_OK(cohort_send(w, h, n, COHORT_UINT32, me + 1, 6));
    } else if (me % 2 == 1) {
        CHECK_OK(cohort_recv(w, d2, n, COHORT_UINT32, me - 1, 6));
        from_dev(back, d2, n * 4);
        CHECK(back[n - 1] == (uint32_t)((me - 1) * 1000003u + n - 1));
    }
    /* a device send freed at once, its staging copy likely still running (the fake's events
     * answer "not ready" twice): the free waits for the copy before its bounce goes back and
     * tells the receiver, which drops the message; the receive that matches it later ends
     * COHORT_ERR_CANCELED (or OK with the whole message, had it gone before the free); the
     * group is not revoked (cohort_request_free in cohort.h) */
    if (nranks > 1) {
        int *ranks = malloc((size_t)nranks * sizeof(int));
        cohort_group_t *g = NULL;
        CHECK(ranks != NULL);
        for (int k = 0; k < nranks; k++) {
            ranks[k] = k;
        }
        CHECK_OK(cohort_group_create(ctx, "p2p-free", ranks, nranks, &g));
        if (me == 0) {
            CHECK_OK(cohort_isend(g, d, n, COHORT_UINT32, 1, 9, &rq[0]));
            cohort_request_free(rq[0]);
        }
        CHECK_OK(cohort_barrier(g));
        if (me == 1) {
            cohort_status_t st;
            st = cohort_recv(g, d2, n, COHORT_UINT32, 0, 9);
            CHECK(st == COHORT_ERR_CANCELED || st == COHORT_OK);
            if (st == COHORT_OK) {
                from_dev(back, d2, n * 4);
                for (size_t i = 0; i < n; i++) {
                    CHECK(back[i] == (uint32_t)i);
                }
            }
        }
        CHECK_OK(cohort_barrier(g));
        CHECK_OK(cohort_group_free(g));
        free(ranks);
        CHECK_OK(cohort_barrier(w));
    }
    cu.free_device(d);
    cu.free_device(d2);
    free(h);
    free(back);
}

/* One allreduce of @a n uint32 (SUM) from @a s into @a r, device buffers, checked. */
static void dev_allreduce(cohort_group_t *w, void *s, void *r, size_t n, uint32_t salt)
{
    uint32_t *h = malloc(n * 4);

    CHECK(h != NULL);
    for (size_t i = 0; i < n; i++) {
        h[i] = (uint32_t)me * salt + (uint32_t)i;
    }
    to_dev(s, h, n * 4);
    CHECK_OK(cohort_allreduce(w, s, r, n, COHORT_UINT32, COHORT_SUM));
    from_dev(h, r, n * 4);
    for (size_t i = 0; i < n; i++) {
        CHECK(h[i] == salt * (uint32_t)(nranks * (nranks - 1) / 2) + (uint32_t)(nranks * i));
    }
    free(h);
}

/* The IPC cache (COHORT_CUDA_IPC_CACHE, default on): the same buffers again map nothing new;
 * new allocations (at the addresses of freed ones, typically) are mapped afresh, never served
 * from a stale mapping (the data would be the freed buffers'); with the cache off every call
 * maps every peer's input and output. */
static void test_ipc_cache(cohort_context_t *ctx, cohort_group_t *w)
{
    const char *env = getenv("COHORT_CUDA_IPC_CACHE");
    int cached = env == NULL || strcmp(env, "0") != 0;
    uint64_t per_call = 2 * (uint64_t)(nranks - 1); /* every peer's input and output */
    size_t n = 1 << 16;
    void *s = dev_alloc(n * 4, 0), *r = dev_alloc(n * 4, 0);
    cohort_stats_t a, b, c;

    dev_allreduce(w, s, r, n, 3);
    CHECK_OK(cohort_stats(ctx, &a));
    dev_allreduce(w, s, r, n, 5);
    CHECK_OK(cohort_stats(ctx, &b));
    CHECK(b.cuda_ipc_opens == a.cuda_ipc_opens + (cached ? 0 : per_call));
    CHECK(b.cuda_ipc_reuses == a.cuda_ipc_reuses + (cached ? per_call : 0));
    cu.free_device(s);
    cu.free_device(r);
    s = dev_alloc(n * 4, 0);
    r = dev_alloc(n * 4, 0);
    dev_allreduce(w, s, r, n, 7);
    CHECK_OK(cohort_stats(ctx, &c));
    CHECK(c.cuda_ipc_opens == b.cuda_ipc_opens + per_call);
    if (me == 0) {
        printf("cuda_coll: IPC cache %s: %llu mappings opened, %llu reused\n",
               cached ? "on" : "off", (unsigned long long)c.cuda_ipc_opens,
               (unsigned long long)c.cuda_ipc_reuses);
    }
    cu.free_device(s);
    cu.free_device(r);
}

/* Over IPC each member maps only what it reads: a bcast the root's buffer (non-roots, one
 * mapping), a reduce every other input (the root), an alltoall every other input (everyone). */
static void test_ipc_maps(cohort_context_t *ctx, cohort_group_t *w)
{
    size_t n = 4096;
    void *s = dev_alloc(n * 4, 0), *r = dev_alloc(n * 4 * (size_t)nranks, 0);
    void *r2 = dev_alloc(n * 4 * (size_t)nranks, 0);
    uint64_t peers = (uint64_t)(nranks - 1);
    cohort_stats_t a, b, c, d;

    CHECK_OK(cohort_stats(ctx, &a));
    CHECK_OK(cohort_bcast(w, s, n, COHORT_UINT32, 0));
    CHECK_OK(cohort_stats(ctx, &b));
    CHECK(b.cuda_ipc_opens - a.cuda_ipc_opens == (me == 0 ? 0 : 1));
    CHECK_OK(cohort_reduce(w, s, r, n, COHORT_UINT32, COHORT_SUM, 0));
    CHECK_OK(cohort_stats(ctx, &c));
    CHECK(c.cuda_ipc_opens - b.cuda_ipc_opens == (me == 0 ? peers : 0));
    CHECK_OK(cohort_alltoall(w, r, r2, n, COHORT_UINT32));
    CHECK_OK(cohort_stats(ctx, &d));
    CHECK(d.cuda_ipc_opens - c.cuda_ipc_opens == peers);
    cu.free_device(s);
    cu.free_device(r);
    cu.free_device(r2);
}

/* Which staging a large device allreduce took: whole copies around the algorithm, or the
 * algorithm on the device buffers with each transfer staged (COHORT_CUDA_PIPELINE_MIN=0 with a
 * message-based allreduce forced; the default threshold is 4 MiB and same-node groups pick
 * algorithms that read other members' memory, which stage whole). */
static void test_staging_choice(cohort_context_t *ctx, cohort_group_t *w)
{
    const char *min = getenv("COHORT_CUDA_PIPELINE_MIN"), *algo = getenv("COHORT_ALGO_ALLREDUCE");
    int per_xfer = min != NULL && strcmp(min, "0") == 0 && algo != NULL &&
                   (strcmp(algo, "ring") == 0 || strcmp(algo, "recursive_doubling") == 0 ||
                    strcmp(algo, "rabenseifner") == 0);
    size_t n = 1 << 16;
    void *s = dev_alloc(n * 4, 0), *r = dev_alloc(n * 4, 0);
    cohort_stats_t a, b;

    CHECK_OK(cohort_stats(ctx, &a));
    dev_allreduce(w, s, r, n, 11);
    CHECK_OK(cohort_stats(ctx, &b));
    if (per_xfer) {
        CHECK(b.cuda_staged_calls == a.cuda_staged_calls &&
              b.cuda_staged_xfers > a.cuda_staged_xfers);
    } else {
        CHECK(b.cuda_staged_calls == a.cuda_staged_calls + 1 &&
              b.cuda_staged_xfers == a.cuda_staged_xfers);
    }
    if (me == 0) {
        printf("cuda_coll: a 256 KiB device allreduce (%s) staged %s\n", algo ? algo : "default",
               per_xfer ? "transfer by transfer" : "whole");
    }
    cu.free_device(s);
    cu.free_device(r);
}

/* cohort_group_set_stream: the input is written by an asynchronous copy on the caller's
 * stream, and the collective is posted at once, the stream not synchronized: it must wait for
 * the copy (the fake makes a stream's copies only when the stream is synchronized or an event
 * recorded after them is found complete: a collective that read its input early would see
 * zeros). Blocking and nonblocking, staged whole and large (IPC, or per transfer, as the run's
 * settings say); then NULL again. */
static void test_stream(cohort_group_t *w)
{
    static const size_t sizes[] = {4096, (size_t)1 << 17};
    void *st = NULL;

    CHECK(cu.stream_create(&st) == 0);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        uint32_t *h = malloc(n * 4);
        void *s = dev_alloc(n * 4, 0), *r = dev_alloc(n * 4, 0);
        for (int nb = 0; nb < 2; nb++) {
            cohort_request_t *rq;
            CHECK(h != NULL && cu.memset_device(s, 0, n * 4) == 0);
            for (size_t i = 0; i < n; i++) {
                h[i] = (uint32_t)me * 13u + (uint32_t)i + (uint32_t)nb;
            }
            CHECK(cu.memcpy_async(s, h, n * 4, BENCH_CUDA_MEMCPY_DEFAULT, st) == 0);
            CHECK_OK(cohort_group_set_stream(w, st));
            if (nb) {
                CHECK_OK(cohort_iallreduce(w, s, r, n, COHORT_UINT32, COHORT_SUM, &rq));
                CHECK_OK(cohort_wait(rq));
                cohort_request_free(rq);
            } else {
                CHECK_OK(cohort_allreduce(w, s, r, n, COHORT_UINT32, COHORT_SUM));
            }
            CHECK_OK(cohort_group_set_stream(w, NULL));
            from_dev(h, r, n * 4);
            for (size_t i = 0; i < n; i++) {
                CHECK(h[i] == 13u * (uint32_t)(nranks * (nranks - 1) / 2) +
                                  (uint32_t)nranks * ((uint32_t)i + (uint32_t)nb));
            }
        }
        cu.free_device(s);
        cu.free_device(r);
        free(h);
    }
    CHECK(cu.stream_destroy(st) == 0);
    CHECK_STATUS(cohort_group_set_stream(NULL, NULL), COHORT_ERR_INVALID_ARG);
    if (me == 0) {
        printf("cuda_coll: collectives ordered after a CUDA stream (cohort_group_set_stream) "
               "waited for its copy\n");
    }
}

/* One allreduce (SUM, uint32) of @a n elements on this rank's device buffers or host ones (in
 * place or not), checked; and what it added to this rank's IPC counters. */
static void vote_allreduce(cohort_context_t *ctx, cohort_group_t *w, int on_dev, int in_place,
                           size_t n, uint32_t salt, uint64_t *votes, uint64_t *ipc_calls)
{
    uint32_t *h = malloc(n * 4);
    void *s = on_dev ? dev_alloc(n * 4, 0) : malloc(n * 4);
    void *r = on_dev ? dev_alloc(n * 4, 0) : malloc(n * 4);
    cohort_stats_t a, b;

    CHECK(h != NULL && s != NULL && r != NULL);
    for (size_t i = 0; i < n; i++) {
        h[i] = (uint32_t)me * salt + (uint32_t)i;
    }
    if (on_dev) {
        to_dev(in_place ? r : s, h, n * 4);
    } else {
        memcpy(in_place ? r : s, h, n * 4);
    }
    CHECK_OK(cohort_stats(ctx, &a));
    CHECK_OK(cohort_allreduce(w, in_place ? COHORT_IN_PLACE : s, r, n, COHORT_UINT32, COHORT_SUM));
    CHECK_OK(cohort_stats(ctx, &b));
    if (on_dev) {
        from_dev(h, r, n * 4);
    } else {
        memcpy(h, r, n * 4);
    }
    for (size_t i = 0; i < n; i++) {
        CHECK(h[i] == salt * (uint32_t)(nranks * (nranks - 1) / 2) + (uint32_t)(nranks * i));
    }
    *votes = b.cuda_ipc_votes - a.cuda_ipc_votes;
    *ipc_calls = b.cuda_ipc_calls - a.cuda_ipc_calls;
    if (on_dev) {
        cu.free_device(s);
        cu.free_device(r);
    } else {
        free(s);
        free(r);
    }
    free(h);
}

/* COHORT_CUDA_IPC=auto: a same-node call from COHORT_CUDA_IPC_MIN bytes per member votes, and
 * goes through IPC when every member's buffers are on the device; below it, no vote; one member
 * with host buffers (or shown no device, FAKE_CUDA_NO_DEVICE_RANK) and every member takes the
 * normal algorithm, with the right result everywhere. Under COHORT_CHECK=1 the vote rides with
 * the argument check. A world spanning nodes never votes (tests/launch/hosts.sh). */
static void test_vote(cohort_context_t *ctx, cohort_group_t *w, int have_dev)
{
    const char *env = getenv("COHORT_CUDA_IPC_MIN");
    size_t min = env != NULL ? (size_t)strtoull(env, NULL, 10) : (size_t)1 << 20;
    size_t n = min / 4;
    int all_dev = getenv("FAKE_CUDA_NO_DEVICE_RANK") == NULL, one_node = 1;
    uint64_t v, c, votes;
    cohort_node_info_t node;

    for (int k = 0; k < nranks; k++) {
        CHECK_OK(cohort_node_info(ctx, k, &node));
        one_node = one_node && node.same_node;
    }
    votes = (uint64_t)one_node;
    all_dev = all_dev && one_node;
    vote_allreduce(ctx, w, have_dev, 0, n, 3, &v, &c);
    CHECK(v == votes && c == (uint64_t)all_dev);
    vote_allreduce(ctx, w, have_dev, 1, n, 5, &v, &c);
    CHECK(v == votes && c == (uint64_t)all_dev);
    vote_allreduce(ctx, w, have_dev, 0, n / 2, 7, &v, &c);
    CHECK(v == 0 && c == 0);
    /* rank 0 passes host buffers */
    vote_allreduce(ctx, w, have_dev && me != 0, 0, n, 9, &v, &c);
    CHECK(v == votes && c == 0);
    vote_allreduce(ctx, w, have_dev, 0, n, 11, &v, &c);
    CHECK(v == votes && c == (uint64_t)all_dev);
    if (me == 0) {
        printf("cuda_coll: CUDA IPC vote from %zu bytes%s: %s, no vote below\n", min,
               getenv("COHORT_CHECK") != NULL ? " (with COHORT_CHECK=1)" : "",
               !one_node ? "no vote (the world spans nodes)"
               : all_dev ? "IPC when every member's buffers are on the device, the normal "
                           "algorithm when one member's are not"
                         : "the normal algorithm everywhere (a rank is shown no device)");
    }
}

/* CUDA_COLL_KERNEL_FAIL=1, under the real module and the fake runtime (whose kernels cannot
 * run): an allreduce on device buffers that reduces on the device fails on every member with a
 * status (COHORT_ERR_CUDA here, or the revocation a member that failed first sent), never a hang;
 * the group stays failed, and the world group goes on. */
static void test_kernel_fail(cohort_context_t *ctx, cohort_group_t *w)
{
    size_t n = 1 << 16;
    void *s = dev_alloc(n * 4, 0), *r = dev_alloc(n * 4, 0);
    int *all = malloc((size_t)nranks * sizeof(int));
    int *ranks = malloc((size_t)nranks * sizeof(int));
    cohort_group_t *g = NULL;
    cohort_status_t st;

    CHECK(all != NULL && ranks != NULL);
    for (int k = 0; k < nranks; k++) {
        ranks[k] = k;
    }
    CHECK_OK(cohort_group_create(ctx, "kernel-fail", ranks, nranks, &g));
    st = cohort_allreduce(g, s, r, n, COHORT_FLOAT32, COHORT_SUM);
    CHECK(st == COHORT_ERR_CUDA || st == COHORT_ERR_REVOKED);
    CHECK(cohort_allreduce(g, s, r, n, COHORT_FLOAT32, COHORT_SUM) != COHORT_OK);
    CHECK_OK(cohort_allgather(w, &me, all, 1, COHORT_INT32));
    for (int k = 0; k < nranks; k++) {
        CHECK(all[k] == k);
    }
    if (me == 0) {
        printf("cuda_coll: a device reduction that fails: %s here, the group failed, the world "
               "goes on\n",
               cohort_strerror(st));
    }
    cohort_group_free(g);
    cu.free_device(s);
    cu.free_device(r);
    free(all);
    free(ranks);
}

/* One configuration (test_configs): every setting the test reads, COHORT_*, CUDA_COLL_* and the
 * fake runtime's FAKE_CUDA_*, is read here or below, after the configuration's environment is
 * set; nothing of a configuration outlives it but the runtime's table (cu, loaded again). */
/* CUDA_COLL_DEVICE_FIRST: the process loaded CUDA before cohort_init and its first collective
 * is on device buffers, before anything asked cohort about CUDA. The loader's answer taken at
 * init (src/mem/gpu.c, cohort_gpu_scan_loaded) must be kept: forgotten, the buffer is taken for
 * host memory and read as such (the fake runtime's device memory faults on any host access). */
static void test_device_first(cohort_group_t *w)
{
    int x = me + 1, got = 0, *in = NULL, *out = NULL;

    CHECK(cu.malloc_device((void **)&in, sizeof(int)) == 0);
    CHECK(cu.malloc_device((void **)&out, sizeof(int)) == 0);
    CHECK(cu.memcpy_any(in, &x, sizeof(int), BENCH_CUDA_MEMCPY_DEFAULT) == 0);
    CHECK_OK(cohort_allreduce(w, in, out, 1, COHORT_INT32, COHORT_SUM));
    CHECK(cu.memcpy_any(&got, out, sizeof(int), BENCH_CUDA_MEMCPY_DEFAULT) == 0);
    CHECK(got == nranks * (nranks + 1) / 2);
    CHECK(cu.free_device(in) == 0 && cu.free_device(out) == 0);
    if (me == 0) {
        printf("cuda_coll: the first collective on device buffers, CUDA loaded before init: "
               "right sum\n");
    }
}

static int one_configuration(void)
{
    static const coll_t colls[] = {
        {"bcast", 0, 1, 0, 1, 1},          {"reduce", 1, 1, 1, 1, 1},
        {"allreduce", 1, 0, 1, 1, 1},      {"allgather", 0, 0, 1, 1, 0},
        {"reduce_scatter", 1, 0, 1, 0, 1}, {"alltoall", 0, 0, 0, 0, 0},
    };
    char why[256];
    int first =
        getenv("CUDA_COLL_DEVICE_FIRST") != NULL && bench_cudart_load(&cu, why, sizeof(why)) == 0;
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    cohort_cuda_info_t info;
    int x, sum = 0, ndev = 0, cases = 0;
    const size_t ncounts = sizeof(counts) / sizeof(counts[0]);

    nranks = cohort_world_size(ctx);
    me = cohort_world_rank(ctx);
    x = me + 1;
    if (first) {
        test_device_first(w);
        test_finish(ctx, "cuda_coll");
        return 0;
    }
    CHECK_OK(cohort_cuda_info(ctx, &info));
    CHECK_STATUS(cohort_cuda_info(ctx, NULL), COHORT_ERR_INVALID_ARG);
    /* Whatever CUDA says, host buffers work (an allgather: a reduction would need kernels if
     * the real module runs under the fake runtime with IPC on). */
    {
        int *all = calloc((size_t)nranks, sizeof(int));
        CHECK(all != NULL);
        CHECK_OK(cohort_allgather(w, &x, all, 1, COHORT_INT32));
        for (int r = 0; r < nranks; r++) {
            sum += all[r];
        }
        free(all);
    }
    CHECK(sum == nranks * (nranks + 1) / 2);
    if (info.devices == 0 && getenv("CUDA_COLL_VOTE") != NULL && nranks > 1) {
        /* shown no device among ranks that have one: it votes all the same */
        test_vote(ctx, w, 0);
        test_finish(ctx, "cuda_coll");
        return 0;
    }
    if (info.devices == 0) {
        CHECK(info.reason[0] != '\0' && info.ipc == 0);
        /* no device: a stream is refused, NULL is fine */
        CHECK_STATUS(cohort_group_set_stream(w, (void *)&x), COHORT_ERR_UNSUPPORTED);
        CHECK_OK(cohort_group_set_stream(w, NULL));
        if (me == 0) {
            printf("cuda_coll: SKIP: %s (built with CUDA: %s)\n", info.reason,
                   info.built ? "yes" : "no");
        }
        CHECK_OK(cohort_finalize(ctx));
        return 77;
    }
    CHECK(info.built == 1 && info.reason[0] == '\0');
    CHECK(bench_cudart_load(&cu, why, sizeof(why)) == 0);
    CHECK(cu.get_device_count(&ndev) == 0 && ndev > 0);
    if (me == 0) {
        printf("cuda_coll: %d device(s), UCX CUDA memory %s, IPC %s\n", info.devices,
               info.ucx_cuda ? "yes" : "no (staged)", info.ipc ? "on" : "off");
    }
    if (getenv("CUDA_COLL_KERNEL_FAIL") != NULL) {
        test_kernel_fail(ctx, w);
        test_finish(ctx, "cuda_coll");
        return 0;
    }
    if (getenv("CUDA_COLL_VOTE") != NULL && nranks > 1) {
        test_vote(ctx, w, 1);
        test_finish(ctx, "cuda_coll");
        return 0;
    }
    for (int c = 0; c < 6; c++) {
        const coll_t *co = &colls[c];
        const char *only = getenv("CUDA_COLL_ONLY");
        coll_t sized = *co;
        if (only != NULL && !listed(only, co->name)) {
            continue;
        }
        sized.sfac = co->sfac ? 1 : (size_t)nranks;
        sized.rfac = co->rfac ? 1 : (size_t)nranks;
        for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++) {
            for (size_t o = 0; o < (co->has_op ? sizeof(ops) / sizeof(ops[0]) : 1); o++) {
                if (co->has_op && ops[o] == COHORT_AVG && !is_float(dtypes[d])) {
                    continue;
                }
                for (size_t k = 0; k < ncounts; k++) {
                    /* Quick mode: one count per (dtype, op), turning with both, so that each
                     * (dtype, count), (op, count) and (dtype, op) pair of a reduction still
                     * meets; full mode (TEST_FULL=1): every count of every pair. */
                    if (!test_full() && k != (d + o) % ncounts) {
                        continue;
                    }
                    /* every root for the smallest count, root 0 and the last otherwise */
                    for (int root = 0; root < (co->has_root ? nranks : 1); root++) {
                        if (k > 0 && root != 0 && root != nranks - 1) {
                            continue;
                        }
                        cases += one_case(w, &sized, c, dtypes[d], ops[o], counts[k], root);
                    }
                }
            }
        }
    }
    if (getenv("CUDA_COLL_ONLY") == NULL || listed(getenv("CUDA_COLL_ONLY"), "p2p")) {
        test_p2p(ctx, w);
    }
    if (getenv("CUDA_COLL_ONLY") == NULL) {
        const char *mode = getenv("COHORT_CUDA_IPC");
        test_stream(w);
        if (mode != NULL && strcmp(mode, "on") == 0 && nranks > 1) {
            test_ipc_cache(ctx, w);
            test_ipc_maps(ctx, w);
        } else if (mode != NULL && strcmp(mode, "off") == 0 && nranks > 1) {
            test_staging_choice(ctx, w);
        } else if (nranks > 1) {
            test_vote(ctx, w, 1);
        }
    }
    if (me == 0) {
        printf("cuda_coll: %d device cases matched the reference\n", cases);
    }
    if (getenv("CUDA_COLL_EXPECT_IPC") != NULL) {
        /* COHORT_ALGO_<COLL>=cuda_ipc (a row of the selection table): the calls went through it */
        cohort_stats_t st;
        CHECK_OK(cohort_stats(ctx, &st));
        CHECK(st.cuda_ipc_calls > 0);
        if (me == 0) {
            printf("cuda_coll: %llu calls through CUDA IPC as COHORT_ALGO_ named it\n",
                   (unsigned long long)st.cuda_ipc_calls);
        }
    }
    test_finish(ctx, "cuda_coll");
    return 0;
}

int main(void)
{
    return test_configs(one_configuration);
}
