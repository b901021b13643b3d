/*
 * cohort_bench <collective>: a size sweep of one collective on the world group, printed in
 * nccl-tests' columns. Built with MPI (BENCH_WITH_MPI), the same operation also runs through
 * MPI on MPI_COMM_WORLD in the same processes, on the same buffers, interleaved A/B/B/A
 * (cohort, MPI, MPI, cohort) so that drift over the run falls on both alike.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef BENCH_WITH_MPI
#include <mpi.h>
#endif
#include "bench.h"

extern char **environ;

#define BENCH_KIB        ((size_t)1024)
#define BENCH_MAX_BYTES  ((size_t)1 << 40) /* an upper bound that keeps size arithmetic safe */
#define BENCH_TAG        0x7b3
#define BENCH_MISMATCHES 5 /* mismatches printed per rank and library */
#define BENCH_SENTINEL   0xa5
#define BENCH_LIB_COHORT 0
#define BENCH_LIB_MPI    1
/* The memcpy bound: 11 copies, so that one slowed by another process on a shared core moves
 * the median by at most a place; at least 1 MiB, past the first cache levels, as the largest
 * sizes of a sweep are. */
#define BENCH_BOUND_REPS 11
#define BENCH_BOUND_MIN  (BENCH_KIB * BENCH_KIB)
/* The most values bench_allmax reduces at once: both libraries' tail statistics. */
#define BENCH_ALLMAX_MAX (2 * BENCH_TAIL_NSTATS)

#ifdef PACKAGE_VERSION
#define BENCH_VERSION PACKAGE_VERSION
#else
#define BENCH_VERSION "0.1"
#endif

enum {
    BENCH_BARRIER,
    BENCH_BCAST,
    BENCH_REDUCE,
    BENCH_ALLREDUCE,
    BENCH_ALLGATHER,
    BENCH_REDUCE_SCATTER,
    BENCH_ALLTOALL
};

typedef struct {
    const char *name;
    int has_op;
    int has_root;
    int split; /* the size is spread over the ranks: count = elements / ranks */
} bench_coll_t;

static const bench_coll_t bench_colls[] = {
    [BENCH_BARRIER] = {"barrier", 0, 0, 0},
    [BENCH_BCAST] = {"bcast", 0, 1, 0},
    [BENCH_REDUCE] = {"reduce", 1, 1, 0},
    [BENCH_ALLREDUCE] = {"allreduce", 1, 0, 0},
    [BENCH_ALLGATHER] = {"allgather", 0, 0, 1},
    [BENCH_REDUCE_SCATTER] = {"reduce_scatter", 1, 0, 1},
    [BENCH_ALLTOALL] = {"alltoall", 0, 0, 1},
};

/* cap: |values| stay below it in any partial result, so every reference is exact. */
typedef struct {
    const char *name;
    cohort_dtype_t dt;
    size_t size;
    int is_float;
    int is_signed;
    double cap;
    double avg_tol; /* relative tolerance of an AVG result */
} bench_dtype_t;

static const bench_dtype_t bench_dtypes[] = {
    {"int8", COHORT_INT8, 1, 0, 1, 100, 0},
    {"uint8", COHORT_UINT8, 1, 0, 0, 150, 0},
    {"int32", COHORT_INT32, 4, 0, 1, 1 << 20, 0},
    {"uint32", COHORT_UINT32, 4, 0, 0, 1 << 20, 0},
    {"int64", COHORT_INT64, 8, 0, 1, 1 << 20, 0},
    {"uint64", COHORT_UINT64, 8, 0, 0, 1 << 20, 0},
    {"float16", COHORT_FLOAT16, 2, 1, 1, 2048, 1.0 / 1024},
    {"bfloat16", COHORT_BFLOAT16, 2, 1, 1, 256, 1.0 / 128},
    {"float32", COHORT_FLOAT32, 4, 1, 1, 1 << 20, 1e-6},
    {"float64", COHORT_FLOAT64, 8, 1, 1, 1 << 20, 1e-12},
};

static const char *const bench_ops[] = {[COHORT_SUM] = "sum",
                                        [COHORT_PROD] = "prod",
                                        [COHORT_MIN] = "min",
                                        [COHORT_MAX] = "max",
                                        [COHORT_AVG] = "avg"};

typedef struct {
    /* options */
    int coll;
    size_t min_bytes, max_bytes, step;
    long iters, warmup; /* < 0: scaled by size */
    long blocks;
    const bench_dtype_t *dt;
    cohort_op_t op;
    long root;
    int root_given, op_given, no_mpi, check, csv;
    int tail;              /* --tail: every timed call timed on its own */
    const char *json_path; /* --json: a file, or "-" for stdout */
    int mem_cuda;          /* --mem cuda: sbuf and rbuf are device buffers */
    bench_cudart_t cu;     /* the CUDA runtime, loaded by --mem cuda only */
    int argc;
    char **argv;
    /* the run */
    cohort_context_t *ctx;
    cohort_group_t *world;
    int rank, n;
    int mpi;        /* MPI runs side by side */
    int yield_set;  /* this program set OMPI_MCA_mpi_yield_when_idle */
    int allmax_p2p; /* cohort_allreduce is not available: reduce times over send/recv */
    int mpi_yield;  /* mpi_yield_when_idle as Open MPI uses it; -1: unknown */
    char yield_note[160];
    char mpi_lib[160];
    char mem_note[160]; /* --mem cuda: the devices and the path cohort takes */
    int text;           /* the header and rows (table or CSV) on stdout: not with --json - */
    FILE *json_file;    /* rank 0 with --json */
    bench_json_t json;
    double bound_gbs; /* the memcpy bound of the rows; 0: n/a */
    size_t bound_bytes;
    char bound_how[224];
    double vmod; /* check values are taken modulo this */
    int vsparse; /* too many ranks for dense values: one rank contributes per element */
    /* the current size */
    size_t bytes, elems, count, sbytes, rbytes;
    void *sbuf, *rbuf;   /* what the calls get: host memory, or device memory (--mem cuda) */
    void *hsbuf, *hrbuf; /* host views, filled and checked here: sbuf and rbuf, or copies */
    double *laps[2];     /* --tail: each library's per-call times, allocated per size */
    long lapped[2];      /* how many of them are taken */
    double tail_stats[2][BENCH_TAIL_NSTATS]; /* theirs, each the largest over ranks */
    double busbw_sum[2];
    int rows, mpi_rows;
} bench_t;

/* ------------------------------------------------------------------------------------------ */
/* Options                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static void bench_usage(FILE *f, const char *coll)
{
    fprintf(f,
            "usage: cohort_bench %s [options]   (run under mpirun; see docs/bench.md)\n"
            "  -b, --min-bytes SIZE    smallest size (default 8); SIZE takes K, M or G (KiB...)\n"
            "  -e, --max-bytes SIZE    largest size (default 16M)\n"
            "  -f, --step-factor N     multiply the size by N each step (default 2; 8: quick)\n"
            "  -n, --iters N           timed iterations per library and size (default: 200 up\n"
            "                          to 256 KiB, then fewer as size grows, at least 10)\n"
            "  -w, --warmup N          untimed iterations first (default iters/10, at least 2)\n"
            "      --blocks N          A/B/B/A blocks the iterations are split into (default 2)\n"
            "  -d, --dtype T           int8 uint8 int32 uint32 int64 uint64 float16 bfloat16\n"
            "                          float32 (default) float64\n"
            "  -o, --op OP             sum (default) prod min max avg (avg: floating types)\n"
            "  -r, --root R            root of bcast and reduce (default 0)\n"
            "  -m, --mem M             host (default) or cuda: buffers in device memory (rank\n"
            "                          i on GPU i %% devices; MPI is not run; the memcpy bound\n"
            "                          is then cudaMemcpy device to device)\n"
            "      --no-mpi            cohort only, even when built with MPI\n"
            "      --check             verify each size once against a local reference first;\n"
            "                          exit 1 on a mismatch\n"
            "      --csv               comma-separated rows instead of the table\n"
            "      --json FILE         also write the header and rows as one JSON object to FILE\n"
            "                          (rank 0; - for stdout, which then carries nothing else)\n"
            "      --tail              time every call: p50, p99, p99.9, max (us) and the calls\n"
            "                          above 1 ms and 0.25 ms per library (each the largest over\n"
            "                          ranks), on a '#  tail' line after each row, appended to\n"
            "                          the CSV, and as \"tail\" in the JSON rows\n"
            "  -h, --help              this text\n"
            "Columns: size (bytes, the whole per-rank buffer as nccl-tests counts it), count\n"
            "(elements), type, redop (or none), root (or -1), then per library time (us, the\n"
            "largest over ranks of the mean per-iteration time), algbw = size/time (GB/s) and\n"
            "busbw = algbw x factor: allreduce 2(n-1)/n; allgather, reduce_scatter and alltoall\n"
            "(n-1)/n; bcast and reduce 1. ratio = MPI time / cohort time: above 1, cohort is\n"
            "faster. busbw/memcpy = cohort busbw / the memcpy bound: single-thread memcpy\n"
            "bandwidth of the largest size (at least 1 MiB), measured at start by every rank at\n"
            "once, the lowest rank's (header line '# memcpy bound'). MPI has no 16-bit float\n"
            "type: its reductions of float16 and bfloat16 show n/a. MPI has no AVG: it runs\n"
            "SUM, marked '*'.\n"
            "Fairness: on an oversubscribed machine (more ranks than cores) run Open MPI with\n"
            "  mpirun --mca mpi_yield_when_idle 1 ...\n"
            "so its waits yield the core as cohort's do (COHORT_PROGRESS=yield). MCA parameters\n"
            "cannot change after MPI_Init; cohort_bench sets OMPI_MCA_mpi_yield_when_idle=1\n"
            "before MPI_Init unless it is already set, and its header says which.\n",
            coll);
}

/* "16M", "64K", "1G", "4096", "2KiB", "8MB": binary multiples. */
static int bench_parse_size(const char *s, size_t *out)
{
    unsigned long long v, mult = 1;
    char *end;

    if (s[0] < '0' || s[0] > '9') {
        return -1;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0) {
        return -1;
    }
    switch (*end) {
    case 'k':
    case 'K':
        mult = 1ULL << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1ULL << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1ULL << 30;
        end++;
        break;
    default:
        break;
    }
    if (mult > 1 && *end == 'i') {
        end++;
    }
    if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0' || v > BENCH_MAX_BYTES / mult) {
        return -1;
    }
    *out = (size_t)(v * mult);
    return 0;
}

static int bench_parse_long(const char *s, long min, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min) {
        return -1;
    }
    *out = v;
    return 0;
}

/* Only one rank speaks before MPI and cohort know who is who: the launcher says. */
static int bench_is_first_rank(void)
{
    const char *r = getenv("PMIX_RANK");

    if (r == NULL) {
        r = getenv("OMPI_COMM_WORLD_RANK");
    }
    return r == NULL || strcmp(r, "0") == 0;
}

enum {
    OPT_MIN,
    OPT_MAX,
    OPT_STEP,
    OPT_ITERS,
    OPT_WARMUP,
    OPT_BLOCKS,
    OPT_DTYPE,
    OPT_OP,
    OPT_ROOT,
    OPT_MEM,
    OPT_JSON
};

/* The options that take a value, short and long. */
static const char *const bench_opts[][2] = {
    [OPT_MIN] = {"-b", "--min-bytes"},    [OPT_MAX] = {"-e", "--max-bytes"},
    [OPT_STEP] = {"-f", "--step-factor"}, [OPT_ITERS] = {"-n", "--iters"},
    [OPT_WARMUP] = {"-w", "--warmup"},    [OPT_BLOCKS] = {"", "--blocks"},
    [OPT_DTYPE] = {"-d", "--dtype"},      [OPT_OP] = {"-o", "--op"},
    [OPT_ROOT] = {"-r", "--root"},        [OPT_MEM] = {"-m", "--mem"},
    [OPT_JSON] = {"", "--json"},
};

#define BENCH_NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* One option's value into b; @return NULL, or what is wrong with the value. */
static const char *bench_parse_value(bench_t *b, int opt, const char *val)
{
    size_t size;
    long v;

    switch (opt) {
    case OPT_MIN:
    case OPT_MAX:
        if (bench_parse_size(val, &size) != 0) {
            return "expects a size such as 8, 64K, 16M or 1G (at most 1T)";
        }
        *(opt == OPT_MIN ? &b->min_bytes : &b->max_bytes) = size;
        return NULL;
    case OPT_STEP:
        if (bench_parse_long(val, 2, &v) != 0 || v > 1024) {
            return "expects an integer from 2 to 1024";
        }
        b->step = (size_t)v;
        return NULL;
    case OPT_ITERS:
        return bench_parse_long(val, 1, &b->iters) != 0 ? "expects an integer >= 1" : NULL;
    case OPT_WARMUP:
        return bench_parse_long(val, 0, &b->warmup) != 0 ? "expects an integer >= 0" : NULL;
    case OPT_BLOCKS:
        if (bench_parse_long(val, 1, &b->blocks) != 0 || b->blocks > 1000) {
            return "expects an integer from 1 to 1000";
        }
        return NULL;
    case OPT_ROOT:
        b->root_given = 1;
        if (bench_parse_long(val, 0, &b->root) != 0 || b->root > INT_MAX) {
            return "expects a rank >= 0";
        }
        return NULL;
    case OPT_JSON:
        if (val[0] == '\0') {
            return "expects a file name, or - for stdout";
        }
        b->json_path = val;
        return NULL;
    case OPT_MEM:
        if (strcmp(val, "host") != 0 && strcmp(val, "cuda") != 0) {
            return "expects host or cuda";
        }
        b->mem_cuda = val[0] == 'c';
        return NULL;
    case OPT_DTYPE:
        for (int k = 0; k < BENCH_NELEM(bench_dtypes); k++) {
            if (strcmp(val, bench_dtypes[k].name) == 0) {
                b->dt = &bench_dtypes[k];
                return NULL;
            }
        }
        return "expects one of int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32 "
               "float64";
    default:
        b->op_given = 1;
        for (int k = 0; k < BENCH_NELEM(bench_ops); k++) {
            if (strcmp(val, bench_ops[k]) == 0) {
                b->op = (cohort_op_t)k;
                return NULL;
            }
        }
        return "expects one of sum prod min max avg";
    }
}

/* @return 0 to run, 1 for --help, 2 for bad input (explained on stderr). */
static int bench_parse(bench_t *b, int argc, char **argv)
{
    const char *err = NULL, *arg = "", *val;
    int i, k, opt;

    for (k = 0; k < BENCH_NELEM(bench_colls); k++) {
        if (strcmp(argv[0], bench_colls[k].name) == 0) {
            b->coll = k;
        }
    }
    for (i = 1; i < argc && err == NULL; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t len =
            strncmp(argv[i], "--", 2) == 0 && eq != NULL ? (size_t)(eq - argv[i]) : strlen(argv[i]);

        arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            if (bench_is_first_rank()) {
                bench_usage(stdout, argv[0]);
            }
            return 1;
        } else if (strcmp(arg, "--no-mpi") == 0) {
            b->no_mpi = 1;
            continue;
        } else if (strcmp(arg, "--check") == 0) {
            b->check = 1;
            continue;
        } else if (strcmp(arg, "--csv") == 0) {
            b->csv = 1;
            continue;
        } else if (strcmp(arg, "--tail") == 0) {
            b->tail = 1;
            continue;
        }
        for (opt = 0; opt < BENCH_NELEM(bench_opts); opt++) {
            if ((strlen(bench_opts[opt][0]) == len && strncmp(arg, bench_opts[opt][0], len) == 0) ||
                (strlen(bench_opts[opt][1]) == len && strncmp(arg, bench_opts[opt][1], len) == 0)) {
                break;
            }
        }
        if (opt == BENCH_NELEM(bench_opts)) {
            err = "is not an option (see --help)";
            break;
        }
        val = len < strlen(arg) ? arg + len + 1 : i + 1 < argc ? argv[++i] : NULL;
        err = val == NULL ? "needs a value" : bench_parse_value(b, opt, val);
    }
    if (err == NULL && b->min_bytes > b->max_bytes) {
        arg = "--min-bytes";
        err = "is larger than --max-bytes";
    }
    if (err == NULL && b->csv && b->json_path != NULL && strcmp(b->json_path, "-") == 0) {
        arg = "--csv";
        err = "and --json - would both write stdout (give --json a file)";
    }
    if (err == NULL && bench_colls[b->coll].has_op && b->op == COHORT_AVG && !b->dt->is_float) {
        arg = "--op avg";
        err = "needs a floating dtype (float16, bfloat16, float32 or float64)";
    }
    if (err != NULL) {
        if (bench_is_first_rank()) {
            fprintf(stderr, "cohort_bench %s: %.*s %s\ntry: cohort_bench %s --help\n", argv[0],
                    (int)strcspn(arg, "="), arg, err, argv[0]);
        }
        return 2;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Values: every element a small integer, so that sums in any order are exact                   */
/* ------------------------------------------------------------------------------------------ */

static void bench_store(cohort_dtype_t dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case COHORT_INT8:
        ((int8_t *)buf)[i] = (int8_t)v;
        break;
    case COHORT_UINT8:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    case COHORT_INT32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    case COHORT_UINT32:
        ((uint32_t *)buf)[i] = (uint32_t)v;
        break;
    case COHORT_INT64:
        ((int64_t *)buf)[i] = (int64_t)v;
        break;
    case COHORT_UINT64:
        ((uint64_t *)buf)[i] = (uint64_t)v;
        break;
    case COHORT_FLOAT16:
        ((uint16_t *)buf)[i] = cohort_float_to_float16((float)v);
        break;
    case COHORT_BFLOAT16:
        ((uint16_t *)buf)[i] = cohort_float_to_bfloat16((float)v);
        break;
    case COHORT_FLOAT32:
        ((float *)buf)[i] = (float)v;
        break;
    case COHORT_FLOAT64:
        ((double *)buf)[i] = v;
        break;
    }
}

static double bench_load(cohort_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case COHORT_INT8:
        return ((const int8_t *)buf)[i];
    case COHORT_UINT8:
        return ((const uint8_t *)buf)[i];
    case COHORT_INT32:
        return ((const int32_t *)buf)[i];
    case COHORT_UINT32:
        return ((const uint32_t *)buf)[i];
    case COHORT_INT64:
        return (double)((const int64_t *)buf)[i];
    case COHORT_UINT64:
        return (double)((const uint64_t *)buf)[i];
    case COHORT_FLOAT16:
        return cohort_float16_to_float(((const uint16_t *)buf)[i]);
    case COHORT_BFLOAT16:
        return cohort_bfloat16_to_float(((const uint16_t *)buf)[i]);
    case COHORT_FLOAT32:
        return ((const float *)buf)[i];
    case COHORT_FLOAT64:
        return ((const double *)buf)[i];
    }
    return 0;
}

/* Rank r's element j: depends on both, so a misplaced block shows. */
static double bench_value(const bench_t *b, int r, size_t j)
{
    uint64_t h = ((uint64_t)r << 40) ^ (uint64_t)j;
    double v;

    if (bench_colls[b->coll].has_op && (b->op == COHORT_PROD || b->vsparse)) {
        if (((size_t)r + j) % (size_t)b->n != 0) {
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

    for (int r = 1; r < b->n; r++) {
        v = bench_value(b, r, j);
        acc = op == COHORT_PROD  ? acc * v
              : op == COHORT_MIN ? (v < acc ? v : acc)
              : op == COHORT_MAX ? (v > acc ? v : acc)
                                 : acc + v;
    }
    return op == COHORT_AVG ? acc / b->n : acc;
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
        if (b->rank != b->root) {
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
        *out = bench_reduced(b, op, (size_t)b->rank * b->count + j);
        return 1;
    case BENCH_ALLTOALL:
        *out = bench_value(b, (int)peer, (size_t)b->rank * b->count + i);
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
        fprintf(stderr, "cohort_bench: rank %d: cudaMemcpy of %zu bytes failed\n", b->rank, bytes);
        exit(1);
    }
}

static void bench_fill(bench_t *b)
{
    size_t es = b->dt->size;

    for (size_t j = 0; j < b->sbytes / es; j++) {
        bench_store(b->dt->dt, b->hsbuf, j, bench_value(b, b->rank, j));
    }
    memset(b->hrbuf, BENCH_SENTINEL, b->rbytes);
    if (b->coll == BENCH_BCAST && b->rank == b->root) {
        for (size_t j = 0; j < b->rbytes / es; j++) {
            bench_store(b->dt->dt, b->hrbuf, j, bench_value(b, b->rank, j));
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
        got = bench_load(b->dt->dt, b->hrbuf, j);
        diff = got > want ? got - want : want - got;
        if (!(diff <= tol * (want > 1 || want < -1 ? (want < 0 ? -want : want) : 1))) {
            if (wrong++ < BENCH_MISMATCHES) {
                fprintf(stderr,
                        "cohort_bench: rank %d: %s %s, %zu bytes: element %zu is %g, expected "
                        "%g\n",
                        b->rank, lib, bench_colls[b->coll].name, b->bytes, j, got, want);
            }
        }
    }
    return wrong;
}

/* ------------------------------------------------------------------------------------------ */
/* The two libraries                                                                            */
/* ------------------------------------------------------------------------------------------ */

static cohort_status_t bench_cohort_call(const bench_t *b)
{
    cohort_dtype_t dt = b->dt->dt;
    int root = (int)b->root;

    switch (b->coll) {
    case BENCH_BARRIER:
        return cohort_barrier(b->world);
    case BENCH_BCAST:
        return cohort_bcast(b->world, b->rbuf, b->count, dt, root);
    case BENCH_REDUCE:
        return cohort_reduce(b->world, b->sbuf, b->rbuf, b->count, dt, b->op, root);
    case BENCH_ALLREDUCE:
        return cohort_allreduce(b->world, b->sbuf, b->rbuf, b->count, dt, b->op);
    case BENCH_ALLGATHER:
        return cohort_allgather(b->world, b->sbuf, b->rbuf, b->count, dt);
    case BENCH_REDUCE_SCATTER:
        return cohort_reduce_scatter(b->world, b->sbuf, b->rbuf, b->count, dt, b->op);
    default:
        return cohort_alltoall(b->world, b->sbuf, b->rbuf, b->count, dt);
    }
}

#ifdef BENCH_WITH_MPI
/* MPI_DATATYPE_NULL where MPI has no such type. A bcast, allgather or alltoall only moves
 * bytes, so a 16-bit float travels as MPI_UINT16_T; reducing one has no MPI equivalent. */
static MPI_Datatype bench_mpi_type(const bench_t *b)
{
    switch (b->dt->dt) {
    case COHORT_INT8:
        return MPI_INT8_T;
    case COHORT_UINT8:
        return MPI_UINT8_T;
    case COHORT_INT32:
        return MPI_INT32_T;
    case COHORT_UINT32:
        return MPI_UINT32_T;
    case COHORT_INT64:
        return MPI_INT64_T;
    case COHORT_UINT64:
        return MPI_UINT64_T;
    case COHORT_FLOAT32:
        return MPI_FLOAT;
    case COHORT_FLOAT64:
        return MPI_DOUBLE;
    default:
        return bench_colls[b->coll].has_op ? MPI_DATATYPE_NULL : MPI_UINT16_T;
    }
}

/* MPI has no AVG: it runs SUM (marked in the output). */
static MPI_Op bench_mpi_op(cohort_op_t op)
{
    return op == COHORT_PROD  ? MPI_PROD
           : op == COHORT_MIN ? MPI_MIN
           : op == COHORT_MAX ? MPI_MAX
                              : MPI_SUM;
}

static void bench_mpi_call(const bench_t *b)
{
    MPI_Datatype t = bench_mpi_type(b);
    MPI_Op op = bench_mpi_op(b->op);
    int n = (int)b->count, root = (int)b->root;

    switch (b->coll) {
    case BENCH_BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case BENCH_BCAST:
        MPI_Bcast(b->rbuf, n, t, root, MPI_COMM_WORLD);
        break;
    case BENCH_REDUCE:
        MPI_Reduce(b->sbuf, b->rbuf, n, t, op, root, MPI_COMM_WORLD);
        break;
    case BENCH_ALLREDUCE:
        MPI_Allreduce(b->sbuf, b->rbuf, n, t, op, MPI_COMM_WORLD);
        break;
    case BENCH_ALLGATHER:
        MPI_Allgather(b->sbuf, n, t, b->rbuf, n, t, MPI_COMM_WORLD);
        break;
    case BENCH_REDUCE_SCATTER:
        MPI_Reduce_scatter_block(b->sbuf, b->rbuf, n, t, op, MPI_COMM_WORLD);
        break;
    default:
        MPI_Alltoall(b->sbuf, n, t, b->rbuf, n, t, MPI_COMM_WORLD);
        break;
    }
}

/* The value Open MPI really uses, read back through MPI_T; -1 when it cannot be read. */
static int bench_mpi_cvar(const char *name)
{
    int provided, idx, count, verbosity, bind, scope, nlen, dlen, value = -1;
    char vname[256], desc[1024];
    MPI_Datatype type;
    MPI_T_enum enumtype;
    MPI_T_cvar_handle h;
    union {
        int i;
        long long ll;
        char bytes[32];
    } buf;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        return -1;
    }
    nlen = sizeof(vname);
    dlen = sizeof(desc);
    if (MPI_T_cvar_get_index(name, &idx) == MPI_SUCCESS &&
        MPI_T_cvar_get_info(idx, vname, &nlen, &verbosity, &type, &enumtype, desc, &dlen, &bind,
                            &scope) == MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) == MPI_SUCCESS) {
        memset(&buf, 0, sizeof(buf));
        if (count == 1 && MPI_T_cvar_read(h, &buf) == MPI_SUCCESS) {
            if (type == MPI_INT || type == MPI_UNSIGNED) {
                value = buf.i;
            } else if (type == MPI_C_BOOL || type == MPI_CHAR) {
                value = buf.bytes[0] != 0;
            } else if (type == MPI_LONG_LONG) {
                value = (int)buf.ll;
            }
        }
        MPI_T_cvar_handle_free(&h);
    }
    MPI_T_finalize();
    return value;
}
#endif

/* Why the header has no MPI figures. */
static const char *bench_mpi_absent(const bench_t *b)
{
#ifdef BENCH_WITH_MPI
    return b->mem_cuda ? "not run (device buffers; this MPI is not CUDA-aware)"
                       : "not run (--no-mpi)";
#else
    (void)b;
    return "not built in (cohort only)";
#endif
}

/* MPI can run this size: built with it, a type for it, and a count that fits an int. */
static int bench_mpi_usable(const bench_t *b)
{
#ifdef BENCH_WITH_MPI
    return b->mpi && bench_mpi_type(b) != MPI_DATATYPE_NULL && b->count <= (size_t)INT_MAX;
#else
    (void)b;
    return 0;
#endif
}

/* A cohort call failed. UNSUPPORTED and INVALID_ARG come from argument checks and algorithm
 * selection, alike on every rank, so all ranks leave cleanly and rank 0 speaks for them.
 * Anything else may have left peers waiting in a collective: with MPI, abort the job. */
static int bench_fail(const bench_t *b, const char *call, cohort_status_t st)
{
    int alike = st == COHORT_ERR_UNSUPPORTED || st == COHORT_ERR_INVALID_ARG;

    if (b->rank == 0 || !alike) {
        fprintf(
            stderr, "cohort_bench: rank %d: cohort_%s failed at %zu bytes (%s, %s): %s (%d)%s\n",
            b->rank, call, b->bytes, b->dt->name,
            bench_colls[b->coll].has_op ? bench_ops[b->op] : "no op", cohort_strerror(st), (int)st,
            st == COHORT_ERR_UNSUPPORTED ? "; this build has no algorithm for it yet" : "");
    }
#ifdef BENCH_WITH_MPI
    if (!alike && b->mpi && b->n > 1) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#endif
    return 1;
}

/* The largest of v[0..k) over all ranks, in place (k <= BENCH_ALLMAX_MAX). */
static int bench_allmax(bench_t *b, double *v, int k)
{
    double tmp[BENCH_ALLMAX_MAX];
    cohort_status_t st = COHORT_OK;

    assert(k <= BENCH_ALLMAX_MAX);
    if (b->n == 1) {
        return 0;
    }
#ifdef BENCH_WITH_MPI
    if (b->mpi) {
        MPI_Allreduce(MPI_IN_PLACE, v, k, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        return 0;
    }
#endif
    if (!b->allmax_p2p) {
        st = cohort_allreduce(b->world, v, tmp, (size_t)k, COHORT_FLOAT64, COHORT_MAX);
        if (st == COHORT_OK) {
            memcpy(v, tmp, (size_t)k * sizeof(*v));
            return 0;
        }
        if (st != COHORT_ERR_UNSUPPORTED) {
            return bench_fail(b, "allreduce (of the times)", st);
        }
        /* Alike on every rank: all switch to point-to-point together. */
        b->allmax_p2p = 1;
        st = COHORT_OK;
    }
    for (int r = 1; r < b->n && st == COHORT_OK; r++) {
        if (b->rank == 0) {
            st = cohort_recv(b->world, tmp, (size_t)k, COHORT_FLOAT64, r, BENCH_TAG);
            for (int i = 0; i < k && st == COHORT_OK; i++) {
                v[i] = tmp[i] > v[i] ? tmp[i] : v[i];
            }
        } else if (r == b->rank) {
            st = cohort_send(b->world, v, (size_t)k, COHORT_FLOAT64, 0, BENCH_TAG);
        }
    }
    for (int r = 1; r < b->n && st == COHORT_OK; r++) {
        if (b->rank == 0) {
            st = cohort_send(b->world, v, (size_t)k, COHORT_FLOAT64, r, BENCH_TAG);
        } else if (r == b->rank) {
            st = cohort_recv(b->world, v, (size_t)k, COHORT_FLOAT64, 0, BENCH_TAG);
        }
    }
    return st == COHORT_OK ? 0 : bench_fail(b, "send/recv (of the times)", st);
}

/* --tail: call i's time, from the end of the call before it. One clock read per call, and
 * the segment's calls still add up to its time. A predicted branch without --tail. */
static inline void bench_lap(double *laps, long i, double *prev)
{
    double now;

    if (laps != NULL) {
        now = bench_now();
        laps[i] = now - *prev;
        *prev = now;
    }
}

/* iters calls of one library after that library's barrier; adds their time to *acc, and each
 * call's to laps[0..iters) unless laps is NULL. */
static int bench_segment(bench_t *b, int lib, long iters, double *acc, double *laps)
{
    cohort_status_t st;
    double t0, prev;

    if (iters == 0) {
        return 0;
    }
#ifdef BENCH_WITH_MPI
    if (lib == BENCH_LIB_MPI) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = prev = bench_now();
        for (long i = 0; i < iters; i++) {
            bench_mpi_call(b);
            bench_lap(laps, i, &prev);
        }
        *acc += bench_now() - t0;
        return 0;
    }
#endif
    (void)lib;
    st = cohort_barrier(b->world);
    if (st != COHORT_OK) {
        return bench_fail(b, "barrier (before timing)", st);
    }
    t0 = prev = bench_now();
    for (long i = 0; i < iters; i++) {
        st = bench_cohort_call(b);
        if (st != COHORT_OK) {
            return bench_fail(b, bench_colls[b->coll].name, st);
        }
        bench_lap(laps, i, &prev);
    }
    *acc += bench_now() - t0;
    return 0;
}

/* Each library once, against the reference; all ranks learn whether any was wrong. */
static int bench_check(bench_t *b)
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
        if (b->rank == 0) {
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

/* ------------------------------------------------------------------------------------------ */
/* The sweep                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static double bench_busbw_factor(const bench_t *b)
{
    double n = b->n;

    switch (b->coll) {
    case BENCH_ALLREDUCE:
        return 2 * (n - 1) / n;
    case BENCH_ALLGATHER:
    case BENCH_REDUCE_SCATTER:
    case BENCH_ALLTOALL:
        return (n - 1) / n;
    case BENCH_BCAST:
    case BENCH_REDUCE:
        return 1;
    default:
        return 0;
    }
}

/* Enough iterations for small sizes to be steady, few enough for 16 MiB to stay short. */
static long bench_default_iters(size_t bytes)
{
    long iters;

    if (bytes <= 256 * BENCH_KIB) {
        return 200;
    }
    iters = (long)(200.0 * (double)(256 * BENCH_KIB) / (double)bytes);
    return iters < 10 ? 10 : iters;
}

/* One row as every output writes it: times in seconds, NAN where the table says n/a. */
typedef struct {
    const char *type, *op;
    const char *mpi_note; /* the CSV's last MPI column: "", "mpi-ran-sum" or "no-mpi-type" */
    int root;
    double time, algbw, busbw, frac;
    double mpi_time, mpi_algbw, mpi_busbw, ratio;
    const double *tail[2]; /* --tail: each library's statistics; NULL where it did not run */
} bench_row_t;

/* v in fmt, or "n/a" where it is not a number. */
static const char *bench_fmt(char *buf, size_t len, const char *fmt, double v)
{
    if (!isfinite(v)) {
        return "n/a";
    }
    snprintf(buf, len, fmt, v);
    return buf;
}

/* --tail in the CSV: cohort's statistics, then MPI's where MPI runs beside it. */
static void bench_tail_csv(const bench_t *b, const bench_row_t *r)
{
    for (int lib = BENCH_LIB_COHORT; lib <= (b->mpi ? BENCH_LIB_MPI : BENCH_LIB_COHORT); lib++) {
        for (int s = 0; s < BENCH_TAIL_NSTATS; s++) {
            if (r->tail[lib] == NULL) {
                printf(",n/a");
            } else {
                printf(s < BENCH_TAIL_OVER_1MS ? ",%.3f" : ",%.0f", r->tail[lib][s]);
            }
        }
    }
}

static void bench_row_csv(const bench_t *b, const bench_row_t *r)
{
    char frac[32];

    printf("%zu,%zu,%s,%s,%d,%.3f,%.4f,%.4f", b->bytes, b->elems, r->type, r->op, r->root,
           r->time * 1e6, r->algbw, r->busbw);
    if (b->mpi && isfinite(r->mpi_time)) {
        printf(",%.3f,%.4f,%.4f,%.4f,%s", r->mpi_time * 1e6, r->mpi_algbw, r->mpi_busbw, r->ratio,
               r->mpi_note);
    } else if (b->mpi) {
        printf(",n/a,n/a,n/a,n/a,%s", r->mpi_note);
    }
    /* Last, so that the columns before it keep their places for the scripts that read them. */
    printf(",%s", bench_fmt(frac, sizeof(frac), "%.6f", r->frac));
    if (b->tail) {
        bench_tail_csv(b, r); /* after even that: added later, and read by name */
    }
    printf("\n");
}

/* One library's part of the '#  tail' line, in the widths of bench_header()'s. */
static void bench_tail_cells(const double *t)
{
    if (t == NULL) {
        printf("  %9s %9s %9s %10s %5s %6s %7s", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a");
        return;
    }
    printf("  %9.2f %9.2f %9.2f %10.2f %5.0f %6.0f %7.0f", t[BENCH_TAIL_P50], t[BENCH_TAIL_P99],
           t[BENCH_TAIL_P999], t[BENCH_TAIL_MAX], t[BENCH_TAIL_OVER_1MS], t[BENCH_TAIL_OVER_250US],
           t[BENCH_TAIL_CALLS]);
}

/* --tail in the table: a line of its own after the row, starting with '#' so that the rows stay
 * the only lines that do not. */
static void bench_tail_table(const bench_t *b, const bench_row_t *r)
{
    printf("#%11s", "tail");
    bench_tail_cells(r->tail[BENCH_LIB_COHORT]);
    if (b->mpi) {
        bench_tail_cells(r->tail[BENCH_LIB_MPI]);
    }
    printf("\n");
}

static void bench_row_table(const bench_t *b, const bench_row_t *r)
{
    char frac[32];
    char mark = strcmp(r->mpi_note, "mpi-ran-sum") == 0 ? '*' : ' ';

    printf("%12zu  %12zu  %8s  %5s  %4d  %9.2f  %6.2f  %6.2f  %12s", b->bytes, b->elems, r->type,
           r->op, r->root, r->time * 1e6, r->algbw, r->busbw,
           bench_fmt(frac, sizeof(frac), "%.4f", r->frac));
    if (b->mpi && isfinite(r->mpi_time)) {
        printf("  %9.2f%c %6.2f  %6.2f\n", r->mpi_time * 1e6, mark, r->mpi_busbw, r->ratio);
    } else {
        printf("%s\n", b->mpi ? "        n/a     n/a     n/a" : "");
    }
    if (b->tail) {
        bench_tail_table(b, r);
    }
}

/* --tail in a JSON row: "tail": {"cohort": {...}, "mpi": {...} or null}. */
static void bench_tail_json(bench_json_t *j, const bench_row_t *r)
{
    static const char *const libs[2] = {"cohort", "mpi"};

    bench_json_object(j, "tail");
    for (int lib = BENCH_LIB_COHORT; lib <= BENCH_LIB_MPI; lib++) {
        if (r->tail[lib] == NULL) {
            bench_json_string(j, libs[lib], NULL);
            continue;
        }
        bench_json_object(j, libs[lib]);
        for (int s = 0; s < BENCH_TAIL_NSTATS; s++) {
            if (s < BENCH_TAIL_OVER_1MS) {
                bench_json_number(j, bench_tail_names[s], r->tail[lib][s]);
            } else {
                bench_json_integer(j, bench_tail_names[s], (long long)r->tail[lib][s]);
            }
        }
        bench_json_end(j);
    }
    bench_json_end(j);
}

/* The CSV's names, where the CSV has the column. */
static void bench_row_json(bench_t *b, const bench_row_t *r)
{
    bench_json_t *j = &b->json;

    bench_json_object(j, NULL);
    bench_json_integer(j, "size", (long long)b->bytes);
    bench_json_integer(j, "count", (long long)b->elems);
    bench_json_string(j, "type", r->type);
    bench_json_string(j, "redop", r->op);
    bench_json_integer(j, "root", r->root);
    bench_json_number(j, "time_us", r->time * 1e6);
    bench_json_number(j, "algbw_gbs", r->algbw);
    bench_json_number(j, "busbw_gbs", r->busbw);
    bench_json_number(j, "busbw_frac_memcpy", r->frac);
    bench_json_number(j, "mpi_time_us", r->mpi_time * 1e6);
    bench_json_number(j, "mpi_algbw_gbs", r->mpi_algbw);
    bench_json_number(j, "mpi_busbw_gbs", r->mpi_busbw);
    bench_json_number(j, "ratio", r->ratio);
    bench_json_string(j, "mpi_note", r->mpi_note[0] != '\0' ? r->mpi_note : NULL);
    if (b->tail) {
        bench_tail_json(j, r);
    }
    bench_json_end(j);
    fflush(b->json_file);
}

static void bench_row(bench_t *b, double t_cohort, double t_mpi, int mpi_ran)
{
    double f = bench_busbw_factor(b);
    bench_row_t r = {
        .type = b->coll == BENCH_BARRIER ? "none" : b->dt->name,
        .op = bench_colls[b->coll].has_op ? bench_ops[b->op] : "none",
        .mpi_note = !b->mpi                                              ? ""
                    : !mpi_ran                                           ? "no-mpi-type"
                    : bench_colls[b->coll].has_op && b->op == COHORT_AVG ? "mpi-ran-sum"
                                                                         : "",
        .root = bench_colls[b->coll].has_root ? (int)b->root : -1,
        .time = t_cohort,
        .algbw = (double)b->bytes / 1e9 / t_cohort,
        .mpi_time = mpi_ran ? t_mpi : NAN,
        .tail = {b->tail ? b->tail_stats[BENCH_LIB_COHORT] : NULL,
                 b->tail && mpi_ran ? b->tail_stats[BENCH_LIB_MPI] : NULL},
    };

    r.busbw = r.algbw * f;
    /* A barrier moves nothing: it has no bandwidth to hold against the bound. */
    r.frac = b->bound_gbs > 0 && f > 0 ? r.busbw / b->bound_gbs : NAN;
    r.mpi_algbw = (double)b->bytes / 1e9 / r.mpi_time;
    r.mpi_busbw = r.mpi_algbw * f;
    r.ratio = r.mpi_time / t_cohort;
    b->busbw_sum[0] += r.busbw;
    b->busbw_sum[1] += mpi_ran ? r.mpi_busbw : 0;
    b->rows++;
    b->mpi_rows += mpi_ran;
    if (b->rank != 0) {
        return;
    }
    if (b->text) {
        (b->csv ? bench_row_csv : bench_row_table)(b, &r);
        fflush(stdout);
    }
    if (b->json_file != NULL) {
        bench_row_json(b, &r);
    }
}

/* --tail: room for every timed call of each library at this size, before any is timed. */
static int bench_laps_alloc(bench_t *b, long iters, int mpi_ran)
{
    for (int lib = BENCH_LIB_COHORT; lib <= BENCH_LIB_MPI; lib++) {
        b->lapped[lib] = 0;
        if (lib == BENCH_LIB_COHORT || mpi_ran) {
            b->laps[lib] = malloc((size_t)iters * sizeof(double));
            if (b->laps[lib] == NULL) {
                return -1;
            }
        }
    }
    return 0;
}

/* Where the next segment of @a lib's iters calls writes their times; NULL without --tail. */
static double *bench_laps(bench_t *b, int lib, long iters)
{
    double *at;

    if (b->laps[lib] == NULL) {
        return NULL;
    }
    at = b->laps[lib] + b->lapped[lib];
    b->lapped[lib] += iters;
    return at;
}

/* --tail: each library's statistics on this rank, then the largest over ranks of each. */
static int bench_tail_reduce(bench_t *b)
{
    if (!b->tail) {
        return 0;
    }
    for (int lib = BENCH_LIB_COHORT; lib <= BENCH_LIB_MPI; lib++) {
        bench_tail_stats(b->laps[lib], b->laps[lib] != NULL ? b->lapped[lib] : 0,
                         b->tail_stats[lib]);
    }
    return bench_allmax(b, &b->tail_stats[0][0], BENCH_ALLMAX_MAX);
}

/* One size: buffers, optional check, warmup, then the A/B/B/A blocks, then one row. */
static int bench_size(bench_t *b)
{
    long iters = b->iters > 0 ? b->iters : bench_default_iters(b->bytes);
    long warmup = b->warmup >= 0 ? b->warmup : (iters / 10 < 2 ? 2 : iters / 10);
    long segs = 2 * b->blocks, seg_iters;
    int mpi_ran = bench_mpi_usable(b), rc = 0, lib;
    double t[2] = {0, 0}, bad;
    size_t es = b->dt->size;

    b->sbytes = b->coll == BENCH_BARRIER || b->coll == BENCH_BCAST ? 0
                : b->coll == BENCH_ALLGATHER                       ? b->bytes / (size_t)b->n
                                                                   : b->bytes;
    b->rbytes = b->coll == BENCH_BARRIER          ? 0
                : b->coll == BENCH_REDUCE_SCATTER ? b->bytes / (size_t)b->n
                                                  : b->bytes;
    /* Never empty, so that a NULL from malloc means failure. */
    b->hsbuf = malloc(b->sbytes > 0 ? b->sbytes : es);
    b->hrbuf = malloc(b->rbytes > 0 ? b->rbytes : es);
    b->sbuf = b->hsbuf;
    b->rbuf = b->hrbuf;
    if (b->mem_cuda) {
        b->sbuf = b->rbuf = NULL;
        if (b->cu.malloc_device(&b->sbuf, b->sbytes > 0 ? b->sbytes : es) != 0 ||
            b->cu.malloc_device(&b->rbuf, b->rbytes > 0 ? b->rbytes : es) != 0) {
            b->sbuf = b->sbuf != NULL ? (b->cu.free_device(b->sbuf), NULL) : NULL;
        }
    }
    bad = b->sbuf == NULL || b->rbuf == NULL || b->hsbuf == NULL || b->hrbuf == NULL;
    if (bad != 0) {
        fprintf(stderr, "cohort_bench: rank %d: cannot allocate %zu + %zu bytes\n", b->rank,
                b->sbytes, b->rbytes);
    } else if (b->tail && bench_laps_alloc(b, iters, mpi_ran) != 0) {
        fprintf(stderr, "cohort_bench: rank %d: --tail: cannot allocate 2 x %ld call times\n",
                b->rank, iters);
        bad = 1;
    }
    if (bench_allmax(b, &bad, 1) != 0 || bad != 0) {
        rc = 1;
        goto out_free;
    }
    if (b->check && bench_check(b) != 0) {
        rc = 1;
        goto out_free;
    }
    /* Real values, not the sentinel: NaNs or subnormals would slow the reductions. */
    bench_fill(b);
    for (lib = BENCH_LIB_COHORT; lib <= (mpi_ran ? BENCH_LIB_MPI : BENCH_LIB_COHORT); lib++) {
        double unused = 0;
        if (bench_segment(b, lib, warmup, &unused, NULL) != 0) {
            rc = 1;
            goto out_free;
        }
    }
    /* Per block: cohort, MPI, MPI, cohort; segment k of a library gets its share. */
    for (long k = 0; k < segs; k++) {
        seg_iters = iters / segs + (k < iters % segs);
        for (int s = 0; s < 2; s++) {
            lib = (k % 2 == 0) == (s == 0) ? BENCH_LIB_COHORT : BENCH_LIB_MPI;
            if ((lib == BENCH_LIB_COHORT || mpi_ran) &&
                bench_segment(b, lib, seg_iters, &t[lib], bench_laps(b, lib, seg_iters))) {
                rc = 1;
                goto out_free;
            }
        }
    }
    t[0] /= (double)iters;
    t[1] /= (double)iters;
    if (bench_allmax(b, t, 2) != 0 || bench_tail_reduce(b) != 0) {
        rc = 1;
        goto out_free;
    }
    bench_row(b, t[0], t[1], mpi_ran);
out_free:
    free(b->laps[BENCH_LIB_MPI]);
    free(b->laps[BENCH_LIB_COHORT]);
    b->laps[BENCH_LIB_COHORT] = b->laps[BENCH_LIB_MPI] = NULL;
    if (b->mem_cuda) {
        b->cu.free_device(b->rbuf);
        b->cu.free_device(b->sbuf);
    }
    free(b->hrbuf);
    free(b->hsbuf);
    b->sbuf = b->rbuf = b->hsbuf = b->hrbuf = NULL;
    return rc;
}

static const char *bench_stat(const char *s)
{
    return s != NULL ? s : "?";
}

/* The size of the step that asks for @a req bytes: whole elements, and for the split
 * collectives whole elements per rank, at least one, as nccl-tests rounds. */
static size_t bench_round(const bench_t *b, size_t req)
{
    size_t per = b->dt->size * (bench_colls[b->coll].split ? (size_t)b->n : 1);

    return (req / per > 0 ? req / per : 1) * per;
}

/* The request after @a req in the sweep; 0 past --max-bytes. */
static size_t bench_next(const bench_t *b, size_t req)
{
    return req > b->max_bytes / b->step ? 0 : req * b->step;
}

/* -b 0 asks for the smallest size there is: one element. */
static size_t bench_first(const bench_t *b)
{
    return b->min_bytes > 0 ? b->min_bytes : 1;
}

static int bench_bound_sync(void *arg)
{
    bench_t *b = arg;
    cohort_status_t st = cohort_barrier(b->world);

    return st == COHORT_OK ? 0 : bench_fail(b, "barrier (memcpy bound)", st);
}

/* The memcpy bound of the rows: the largest size of the sweep (a barrier's: none), and at
 * least BENCH_BOUND_MIN so that the copy does not run from the first cache levels; the lowest
 * rank's median, as the times are reduced (the largest of the negated values). */
static int bench_bound(bench_t *b)
{
    bench_bound_spec_t spec = {.reps = BENCH_BOUND_REPS, .sync = bench_bound_sync, .arg = b};
    size_t req = bench_first(b), last = req;
    double v = 0;

    while ((req = bench_next(b, req)) != 0) {
        last = req;
    }
    spec.bytes = b->coll == BENCH_BARRIER ? 0 : bench_round(b, last);
    spec.bytes = spec.bytes > BENCH_BOUND_MIN ? spec.bytes : BENCH_BOUND_MIN;
    spec.cu = b->mem_cuda ? &b->cu : NULL;
    b->bound_bytes = spec.bytes;
    if (bench_memcpy_bound(&spec, &v) != 0) {
        return 1;
    }
    v = -v;
    if (bench_allmax(b, &v, 1) != 0) {
        return 1;
    }
    b->bound_gbs = -v;
    snprintf(b->bound_how, sizeof(b->bound_how),
             "%s of %zu B, %s, all %d ranks at once, median of %d copies after a warm one, the "
             "lowest rank's",
             b->mem_cuda ? "cudaMemcpy device to device" : "memcpy host to host", b->bound_bytes,
             b->mem_cuda ? "each rank on its device" : "one thread per rank", b->n,
             BENCH_BOUND_REPS);
    return 0;
}

/* --tail: the CSV's columns after busbw_frac_memcpy, tail_<stat> then mpi_tail_<stat>. */
static void bench_tail_csv_names(const bench_t *b)
{
    for (int lib = BENCH_LIB_COHORT; b->tail && lib <= (b->mpi ? BENCH_LIB_MPI : 0); lib++) {
        for (int s = 0; s < BENCH_TAIL_NSTATS; s++) {
            printf(",%stail_%s", lib == BENCH_LIB_MPI ? "mpi_" : "", bench_tail_names[s]);
        }
    }
}

/* --tail: the names of the '#  tail' line's cells (bench_tail_cells). */
static void bench_tail_header(const bench_t *b)
{
    static const char *const lib_rule[2] = {
        "  --------------------------- cohort --------------------------",
        "  ----------------------------- MPI ---------------------------"};

    if (!b->tail) {
        return;
    }
    printf("#%11s%s%s\n", "", lib_rule[0], b->mpi ? lib_rule[1] : "");
    for (int lib = BENCH_LIB_COHORT; lib <= (b->mpi ? BENCH_LIB_MPI : 0); lib++) {
        if (lib == BENCH_LIB_COHORT) {
            printf("#%11s", "tail (us)");
        }
        printf("  %9s %9s %9s %10s %5s %6s %7s", "p50", "p99", "p99.9", "max", ">1ms", ">.25ms",
               "calls");
    }
    printf("\n");
}

static void bench_header(const bench_t *b)
{
    cohort_stats_t stats;
    const char *algo_env = NULL;
    char want[64];
    int other = 0;

    if (cohort_stats(b->ctx, &stats) != COHORT_OK) {
        memset(&stats, 0, sizeof(stats));
    }
    printf("# cohort_bench %s: cohort %s, world size %d, progress %s, exchange plugin %s\n",
           bench_colls[b->coll].name, BENCH_VERSION, b->n, bench_stat(stats.progress),
           bench_stat(stats.pmix_plugin));
    snprintf(want, sizeof(want), "COHORT_ALGO_%s=", bench_colls[b->coll].name);
    for (char *p = want; *p != '\0'; p++) {
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    }
    printf("# algorithm:");
    for (char **e = environ; *e != NULL; e++) {
        if (strncmp(*e, "COHORT_ALGO_", 12) == 0) {
            if (strncmp(*e, want, strlen(want)) == 0) {
                algo_env = *e;
            }
            printf(" %s", *e);
            other++;
        }
    }
    printf("%s\n", algo_env != NULL ? " (forced)"
                   : other > 0      ? " (this collective: default selection)"
                                    : " default selection (no COHORT_ALGO_* set)");
    if (b->mem_cuda) {
        printf("# buffers: %s\n", b->mem_note);
    }
    if (b->bound_gbs > 0) {
        printf("# memcpy bound: %.2f GB/s (%s)\n", b->bound_gbs, b->bound_how);
    } else {
        printf("# memcpy bound: n/a (%s: not every rank had the buffers%s)\n", b->bound_how,
               b->mem_cuda ? " or the CUDA events" : "");
    }
    if (b->mpi) {
        printf("# MPI side by side: %s on MPI_COMM_WORLD, A/B/B/A x %ld blocks; %s\n", b->mpi_lib,
               b->blocks, b->yield_note);
        if (bench_colls[b->coll].has_op && b->op == COHORT_AVG) {
            printf("# '*': MPI has no AVG; it ran SUM\n");
        }
        if (!bench_mpi_usable(b) && b->coll != BENCH_BARRIER) {
            printf("# MPI has no %s reduction: its columns say n/a\n", b->dt->name);
        }
    } else {
        printf("# MPI: %s\n", bench_mpi_absent(b));
    }
    if (b->allmax_p2p) {
        printf("# times: max over ranks through send/recv (cohort_allreduce is not available)\n");
    }
    if (b->iters > 0) {
        printf("# iterations per library and size: %ld", b->iters);
    } else {
        printf("# iterations per library and size: 200 up to 256 KiB, fewer above (at least 10)");
    }
    if (b->warmup >= 0) {
        printf(", warmup %ld", b->warmup);
    } else {
        printf(", warmup a tenth (at least 2)");
    }
    printf("%s\n", b->check ? "; results checked first" : "");
    if (bench_colls[b->coll].has_root == 0 && b->root_given) {
        printf("# --root is ignored: %s has no root\n", bench_colls[b->coll].name);
    }
    if (bench_colls[b->coll].has_op == 0 && b->op_given) {
        printf("# --op is ignored: %s does not reduce\n", bench_colls[b->coll].name);
    }
    printf("# command:");
    printf(" cohort_bench");
    for (int i = 0; i < b->argc; i++) {
        printf(strpbrk(b->argv[i], " \t'\"") ? " '%s'" : " %s", b->argv[i]);
    }
    printf("\n");
    if (b->tail) {
        printf("# tail: every timed call timed on its own; per library the largest over ranks of "
               "each statistic\n");
    }
    if (b->csv) {
        printf("size,count,type,redop,root,time_us,algbw_gbs,busbw_gbs%s,busbw_frac_memcpy",
               b->mpi ? ",mpi_time_us,mpi_algbw_gbs,mpi_busbw_gbs,ratio,mpi_note" : "");
        bench_tail_csv_names(b);
        printf("\n");
    } else {
        /* The widths of bench_row_table(): 49 columns of description, 41 for cohort, 27 for
         * MPI. */
        printf("#\n%-49s  %39s%s\n", "#", "---------------- cohort ---------------",
               b->mpi ? "  ----------- MPI ---------" : "");
        printf("#%11s  %12s  %8s  %5s  %4s  %9s  %6s  %6s  %12s", "size", "count", "type", "redop",
               "root", "time", "algbw", "busbw", "busbw/memcpy");
        printf("%s\n", b->mpi ? "       time   busbw   ratio" : "");
        printf("#%11s  %12s  %8s  %5s  %4s  %9s  %6s  %6s  %12s", "(B)", "(elements)", "", "", "",
               "(us)", "(GB/s)", "(GB/s)", "(fraction)");
        printf("%s\n", b->mpi ? "       (us)  (GB/s)  MPI/co" : "");
        bench_tail_header(b);
    }
    fflush(stdout);
}

/* A count the options left to the size (-1) as JSON null. */
static void bench_json_count(bench_json_t *j, const char *key, long v)
{
    if (v < 0) {
        bench_json_string(j, key, NULL);
    } else {
        bench_json_integer(j, key, v);
    }
}

/* The header's facts, then the opening of "rows"; bench_json_finish closes them. */
static void bench_json_header(bench_t *b)
{
    bench_json_t *j = &b->json;
    cohort_stats_t stats;

    if (cohort_stats(b->ctx, &stats) != COHORT_OK) {
        memset(&stats, 0, sizeof(stats));
    }
    bench_json_open(j, b->json_file);
    bench_json_string(j, "collective", bench_colls[b->coll].name);
    bench_json_string(j, "cohort_version", BENCH_VERSION);
    bench_json_integer(j, "world_size", b->n);
    bench_json_string(j, "progress", stats.progress);
    bench_json_string(j, "exchange_plugin", stats.pmix_plugin);
    bench_json_array(j, "algorithm_env");
    for (char **e = environ; *e != NULL; e++) {
        if (strncmp(*e, "COHORT_ALGO_", 12) == 0) {
            bench_json_string(j, NULL, *e);
        }
    }
    bench_json_end(j);
    bench_json_string(j, "mpi_library", b->mpi ? b->mpi_lib : NULL);
    bench_json_string(j, "mpi_absent", b->mpi ? NULL : bench_mpi_absent(b));
    if (b->mpi && b->mpi_yield >= 0) {
        bench_json_integer(j, "mpi_yield_when_idle", b->mpi_yield);
    } else {
        bench_json_string(j, "mpi_yield_when_idle", NULL);
    }
    bench_json_string(j, "mpi_yield_note", b->mpi ? b->yield_note : NULL);
    bench_json_number(j, "memcpy_bound_gbs", b->bound_gbs > 0 ? b->bound_gbs : NAN);
    bench_json_integer(j, "memcpy_bound_bytes", (long long)b->bound_bytes);
    bench_json_string(j, "memcpy_bound_method", b->bound_how);
    bench_json_array(j, "command");
    bench_json_string(j, NULL, "cohort_bench");
    for (int i = 0; i < b->argc; i++) {
        bench_json_string(j, NULL, b->argv[i]);
    }
    bench_json_end(j);
    bench_json_string(j, "dtype", b->coll == BENCH_BARRIER ? "none" : b->dt->name);
    bench_json_string(j, "op", bench_colls[b->coll].has_op ? bench_ops[b->op] : "none");
    bench_json_string(j, "mem", b->mem_cuda ? "cuda" : "host");
    bench_json_count(j, "iters", b->iters);
    bench_json_count(j, "warmup", b->warmup);
    bench_json_integer(j, "blocks", b->blocks);
    bench_json_bool(j, "check", b->check);
    if (b->tail) {
        /* Only with --tail, so that a run without it writes what it always did. */
        bench_json_string(j, "tail",
                          "every timed call timed on its own; per library the "
                          "largest over ranks of each statistic");
    }
    bench_json_array(j, "rows");
    fflush(b->json_file);
}

/* The rows' end and the summary line's figures. @return 0, or 1 when the file could not be
 * written (said on stderr). */
static int bench_json_finish(bench_t *b, int rc)
{
    bench_json_t *j = &b->json;
    int bad;

    bench_json_end(j); /* rows */
    /* As the summary line: none for a barrier, whose busbw is 0 by definition. */
    bench_json_number(j, "avg_busbw_gbs",
                      b->rows > 0 && b->coll != BENCH_BARRIER ? b->busbw_sum[0] / b->rows : NAN);
    bench_json_number(j, "mpi_avg_busbw_gbs",
                      b->mpi_rows > 0 && b->coll != BENCH_BARRIER ? b->busbw_sum[1] / b->mpi_rows
                                                                  : NAN);
    /* false: the sweep stopped on an error (on stderr), and rows holds the sizes before it. */
    bench_json_bool(j, "completed", rc == 0);
    bench_json_end(j);
    bad = ferror(b->json_file);
    if (b->json_file != stdout) {
        bad |= fclose(b->json_file) != 0;
    }
    b->json_file = NULL;
    if (bad) {
        fprintf(stderr, "cohort_bench: --json %s: could not write the results\n", b->json_path);
    }
    return bad ? 1 : 0;
}

/* Rank 0 opens the file before anything is measured; every rank learns whether it could. */
static int bench_json_start(bench_t *b)
{
    double bad = 0;

    if (b->json_path == NULL) {
        return 0;
    }
    if (b->rank == 0) {
        b->json_file = strcmp(b->json_path, "-") == 0 ? stdout : fopen(b->json_path, "w");
        if (b->json_file == NULL) {
            fprintf(stderr, "cohort_bench %s: --json %s: cannot open for writing: %s\n",
                    bench_colls[b->coll].name, b->json_path, strerror(errno));
            bad = 1;
        }
    }
    if (bench_allmax(b, &bad, 1) != 0) {
        return 1;
    }
    return bad != 0 ? 2 : 0;
}

/* --mem cuda: the runtime and a device per rank (ranks may share one). */
static int bench_cuda_setup(bench_t *b)
{
    cohort_cuda_info_t info;
    char why[256] = "";
    int ndev = 0;

    if (bench_cudart_load(&b->cu, why, sizeof(why)) != 0 || b->cu.get_device_count(&ndev) != 0 ||
        b->cu.set_device(b->rank % ndev) != 0) {
        fprintf(stderr, "cohort_bench: rank %d: --mem cuda: %s\n", b->rank, why);
        return 1;
    }
    if (cohort_cuda_info(b->ctx, &info) != COHORT_OK || info.devices == 0) {
        fprintf(stderr, "cohort_bench: rank %d: --mem cuda: cohort sees %s\n", b->rank,
                info.reason);
        return 1;
    }
    snprintf(b->mem_note, sizeof(b->mem_note),
             "CUDA device memory (%d device(s), rank i on device i %% %d); UCX %s; CUDA IPC %s",
             ndev, ndev, info.ucx_cuda ? "takes CUDA memory" : "has no CUDA transport (staged)",
             info.ipc ? "allowed" : "off");
    return 0;
}

#ifdef BENCH_WITH_MPI
/* MPI beside cohort: one job, and what the header says of Open MPI's waits and version. */
static void bench_mpi_facts(bench_t *b)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int mrank, msize, len = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, &mrank);
    MPI_Comm_size(MPI_COMM_WORLD, &msize);
    if (mrank != b->rank || msize != b->n) {
        fprintf(stderr, "cohort_bench: MPI says rank %d of %d, cohort rank %d of %d: not one job\n",
                mrank, msize, b->rank, b->n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    b->mpi_yield = bench_mpi_cvar("mpi_yield_when_idle");
    snprintf(b->yield_note, sizeof(b->yield_note), "mpi_yield_when_idle=%s (%s)",
             b->mpi_yield < 0 ? "?"
             : b->mpi_yield   ? "1"
                              : "0",
             b->yield_set ? "set by cohort_bench through OMPI_MCA_mpi_yield_when_idle"
                          : "as the launcher or environment set it");
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n,")] = '\0';
    snprintf(b->mpi_lib, sizeof(b->mpi_lib), "%.*s", (int)sizeof(b->mpi_lib) - 1, lib);
}
#endif

/* Everything before the first size: the root, the JSON file, the devices, how times are
 * reduced, the memcpy bound, the header. @return 0, or the exit status. */
static int bench_prepare(bench_t *b)
{
    double probe = 0;
    int rc;

    if (bench_colls[b->coll].has_root && b->root >= b->n) {
        if (b->rank == 0) {
            fprintf(stderr, "cohort_bench %s: --root %ld is not a rank of a world of %d\n",
                    bench_colls[b->coll].name, b->root, b->n);
        }
        return 2;
    }
    rc = bench_json_start(b);
    if (rc != 0) {
        return rc;
    }
    if (b->mem_cuda && bench_cuda_setup(b) != 0) {
        return 2;
    }
    /* Settle how times are reduced now, so that cohort's log line about a missing allreduce
     * comes before the table, not inside it. */
    if (bench_allmax(b, &probe, 1) != 0 || bench_bound(b) != 0) {
        return 1;
    }
    if (b->rank == 0 && b->text) {
        bench_header(b);
    }
    if (b->json_file != NULL) {
        bench_json_header(b);
    }
    return 0;
}

static int bench_sweep(bench_t *b)
{
    size_t prev = 0;
    int rc = 0;

    b->vmod = bench_colls[b->coll].has_op ? b->dt->cap / b->n : b->dt->cap;
    b->vsparse = b->vmod < 2;
    if (b->coll == BENCH_BARRIER) {
        return bench_size(b);
    }
    for (size_t req = bench_first(b); req != 0 && rc == 0; req = bench_next(b, req)) {
        b->bytes = bench_round(b, req);
        if (b->bytes == prev) {
            continue;
        }
        b->elems = b->bytes / b->dt->size;
        b->count = bench_colls[b->coll].split ? b->elems / (size_t)b->n : b->elems;
        rc = bench_size(b);
        prev = b->bytes;
    }
    return rc;
}

static void bench_summary(const bench_t *b)
{
    printf("# Avg bus bandwidth: cohort %.4f GB/s", b->busbw_sum[0] / b->rows);
    if (b->mpi_rows > 0) {
        printf(", MPI %.4f GB/s (over %d sizes)", b->busbw_sum[1] / b->mpi_rows, b->mpi_rows);
    }
    printf("\n");
}

int cohort_bench_coll(int argc, char **argv)
{
    bench_t b;
    cohort_status_t st;
    int rc = 0;

    memset(&b, 0, sizeof(b));
    b.min_bytes = 8;
    b.max_bytes = 16 * BENCH_KIB * BENCH_KIB;
    b.step = 2;
    b.iters = -1;
    b.warmup = -1;
    b.blocks = 2;
    b.dt = &bench_dtypes[8]; /* float32 */
    b.op = COHORT_SUM;
    b.argc = argc;
    b.argv = argv;
    b.mpi_yield = -1;
    rc = bench_parse(&b, argc, argv);
    if (rc != 0) {
        return rc == 1 ? 0 : 2;
    }
    /* stdout carries the JSON alone when it goes there. */
    b.text = b.json_path == NULL || strcmp(b.json_path, "-") != 0;
    /* MPI here is not CUDA-aware: with device buffers cohort runs alone. */
    b.no_mpi |= b.mem_cuda;
#ifdef BENCH_WITH_MPI
    if (!b.no_mpi) {
        /* Read by MPI_Init only: this is the last moment to ask for yielding waits. */
        if (getenv("OMPI_MCA_mpi_yield_when_idle") == NULL) {
            b.yield_set = setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0) == 0;
        }
        MPI_Init(NULL, NULL);
        b.mpi = 1;
    }
#endif
    st = cohort_init(&b.ctx);
    if (st != COHORT_OK) {
        fprintf(stderr, "cohort_bench: cohort_init failed: %s (%d)%s\n", cohort_strerror(st),
                (int)st,
                st == COHORT_ERR_UNSUPPORTED || st == COHORT_ERR_INVALID_ARG
                    ? " (check the COHORT_* settings and COHORT_PLUGIN_PATH)"
                    : "");
        rc = 1;
        goto out_mpi;
    }
    b.world = cohort_world(b.ctx);
    b.rank = cohort_world_rank(b.ctx);
    b.n = cohort_world_size(b.ctx);
#ifdef BENCH_WITH_MPI
    if (b.mpi) {
        bench_mpi_facts(&b);
    }
#endif
    rc = bench_prepare(&b);
    if (rc != 0) {
        goto out_json;
    }
    rc = bench_sweep(&b);
    if (rc == 0 && b.rank == 0 && b.text && b.rows > 0 && b.coll != BENCH_BARRIER) {
        bench_summary(&b);
    }
out_json:
    if (b.json_file != NULL && b.json.depth > 0 && bench_json_finish(&b, rc) != 0 && rc == 0) {
        rc = 1;
    }
    if (b.json_file != NULL && b.json_file != stdout) {
        fclose(b.json_file); /* opened, but failed before the header: nothing to finish */
    }
    cohort_finalize(b.ctx);
out_mpi:
#ifdef BENCH_WITH_MPI
    if (b.mpi) {
        MPI_Finalize();
    }
#endif
    return rc;
}
