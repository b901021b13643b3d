/*
 * cohort_bench <collective>, its arguments: the usage text, the options and the tables of
 * collectives, types and operations they name (sweep.h).
 */
#include "sweep.h"

const bench_coll_t bench_colls[] = {
    [BENCH_BARRIER] = {"barrier", 0, 0, 0},
    [BENCH_BCAST] = {"bcast", 0, 1, 0},
    [BENCH_REDUCE] = {"reduce", 1, 1, 0},
    [BENCH_ALLREDUCE] = {"allreduce", 1, 0, 0},
    [BENCH_ALLGATHER] = {"allgather", 0, 0, 1},
    [BENCH_REDUCE_SCATTER] = {"reduce_scatter", 1, 0, 1},
    [BENCH_ALLTOALL] = {"alltoall", 0, 0, 1},
};

const bench_dtype_t bench_dtypes[] = {
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

const char *const bench_ops[] = {[COHORT_SUM] = "sum",
                                 [COHORT_PROD] = "prod",
                                 [COHORT_MIN] = "min",
                                 [COHORT_MAX] = "max",
                                 [COHORT_AVG] = "avg"};

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

/* One option's value into b; @return NULL, or what is wrong with the value. */
static const char *bench_parse_value(bench_t *b, int opt, const char *val)
{
    size_t size;
    long v;

    switch (opt) {
    case OPT_MIN:
    case OPT_MAX:
        if (bench_parse_size(val, BENCH_MAX_BYTES, &size) != 0) {
            return "expects a size such as 8, 64K, 16M or 1G (at most 1T)";
        }
        *(opt == OPT_MIN ? &b->min_bytes : &b->max_bytes) = size;
        return NULL;
    case OPT_STEP:
        if (bench_parse_long(val, 2, 1024, &v) != 0) {
            return "expects an integer from 2 to 1024";
        }
        b->step = (size_t)v;
        return NULL;
    case OPT_ITERS:
        return bench_parse_long(val, 1, LONG_MAX, &b->iters) != 0 ? "expects an integer >= 1"
                                                                  : NULL;
    case OPT_WARMUP:
        return bench_parse_long(val, 0, LONG_MAX, &b->warmup) != 0 ? "expects an integer >= 0"
                                                                   : NULL;
    case OPT_BLOCKS:
        if (bench_parse_long(val, 1, 1000, &b->blocks) != 0) {
            return "expects an integer from 1 to 1000";
        }
        return NULL;
    case OPT_ROOT:
        b->root_given = 1;
        if (bench_parse_long(val, 0, INT_MAX, &b->root) != 0) {
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

/* The options without a value: whether @a arg is one (then set in b). */
static int bench_parse_flag(bench_t *b, const char *arg)
{
    int *const flags[] = {&b->no_mpi, &b->check, &b->csv, &b->tail};
    static const char *const names[] = {"--no-mpi", "--check", "--csv", "--tail"};

    for (int k = 0; k < BENCH_NELEM(names); k++) {
        if (strcmp(arg, names[k]) == 0) {
            *flags[k] = 1;
            return 1;
        }
    }
    return 0;
}

/* @return 0 to run, 1 for --help, 2 for bad input (explained on stderr). */
int bench_parse(bench_t *b, int argc, char **argv)
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
        }
        if (bench_parse_flag(b, arg)) {
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
