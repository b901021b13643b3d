/*
 * cohort_bench <collective>, the output: the header, a row per size as a table, CSV or JSON
 * (with the tail statistics), and the summary line.
 */
#include "sweep.h"

extern char **environ;

static double bench_busbw_factor(const bench_t *b)
{
    double n = b->run.n;

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
    for (int lib = BENCH_LIB_COHORT; lib <= (b->run.mpi ? BENCH_LIB_MPI : BENCH_LIB_COHORT);
         lib++) {
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
    if (b->run.mpi && isfinite(r->mpi_time)) {
        printf(",%.3f,%.4f,%.4f,%.4f,%s", r->mpi_time * 1e6, r->mpi_algbw, r->mpi_busbw, r->ratio,
               r->mpi_note);
    } else if (b->run.mpi) {
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
    if (b->run.mpi) {
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
    if (b->run.mpi && isfinite(r->mpi_time)) {
        printf("  %9.2f%c %6.2f  %6.2f\n", r->mpi_time * 1e6, mark, r->mpi_busbw, r->ratio);
    } else {
        printf("%s\n", b->run.mpi ? "        n/a     n/a     n/a" : "");
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

void bench_row(bench_t *b, double t_cohort, double t_mpi, int mpi_ran)
{
    double f = bench_busbw_factor(b);
    bench_row_t r = {
        .type = b->coll == BENCH_BARRIER ? "none" : b->dt->name,
        .op = bench_colls[b->coll].has_op ? bench_ops[b->op] : "none",
        .mpi_note = !b->run.mpi                                          ? ""
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
    if (b->run.rank != 0) {
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

static const char *bench_stat(const char *s)
{
    return s != NULL ? s : "?";
}

/* --tail: the CSV's columns after busbw_frac_memcpy, tail_<stat> then mpi_tail_<stat>. */
static void bench_tail_csv_names(const bench_t *b)
{
    for (int lib = BENCH_LIB_COHORT; b->tail && lib <= (b->run.mpi ? BENCH_LIB_MPI : 0); lib++) {
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
    printf("#%11s%s%s\n", "", lib_rule[0], b->run.mpi ? lib_rule[1] : "");
    for (int lib = BENCH_LIB_COHORT; lib <= (b->run.mpi ? BENCH_LIB_MPI : 0); lib++) {
        if (lib == BENCH_LIB_COHORT) {
            printf("#%11s", "tail (us)");
        }
        printf("  %9s %9s %9s %10s %5s %6s %7s", "p50", "p99", "p99.9", "max", ">1ms", ">.25ms",
               "calls");
    }
    printf("\n");
}

void bench_header(const bench_t *b)
{
    cohort_stats_t stats;
    const char *algo_env = NULL;
    char want[64];
    int other = 0;

    if (cohort_stats(b->run.ctx, &stats) != COHORT_OK) {
        memset(&stats, 0, sizeof(stats));
    }
    printf("# cohort_bench %s: cohort %s, world size %d, progress %s, exchange plugin %s\n",
           bench_colls[b->coll].name, BENCH_VERSION, b->run.n, bench_stat(stats.progress),
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
    if (b->run.mpi) {
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
    if (b->run.allmax_p2p) {
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
               b->run.mpi ? ",mpi_time_us,mpi_algbw_gbs,mpi_busbw_gbs,ratio,mpi_note" : "");
        bench_tail_csv_names(b);
        printf("\n");
    } else {
        /* The widths of bench_row_table(): 49 columns of description, 41 for cohort, 27 for
         * MPI. */
        printf("#\n%-49s  %39s%s\n", "#", "---------------- cohort ---------------",
               b->run.mpi ? "  ----------- MPI ---------" : "");
        printf("#%11s  %12s  %8s  %5s  %4s  %9s  %6s  %6s  %12s", "size", "count", "type", "redop",
               "root", "time", "algbw", "busbw", "busbw/memcpy");
        printf("%s\n", b->run.mpi ? "       time   busbw   ratio" : "");
        printf("#%11s  %12s  %8s  %5s  %4s  %9s  %6s  %6s  %12s", "(B)", "(elements)", "", "", "",
               "(us)", "(GB/s)", "(GB/s)", "(fraction)");
        printf("%s\n", b->run.mpi ? "       (us)  (GB/s)  MPI/co" : "");
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
void bench_json_header(bench_t *b)
{
    bench_json_t *j = &b->json;
    cohort_stats_t stats;

    if (cohort_stats(b->run.ctx, &stats) != COHORT_OK) {
        memset(&stats, 0, sizeof(stats));
    }
    bench_json_open(j, b->json_file);
    bench_json_string(j, "collective", bench_colls[b->coll].name);
    bench_json_string(j, "cohort_version", BENCH_VERSION);
    bench_json_integer(j, "world_size", b->run.n);
    bench_json_string(j, "progress", stats.progress);
    bench_json_string(j, "exchange_plugin", stats.pmix_plugin);
    bench_json_array(j, "algorithm_env");
    for (char **e = environ; *e != NULL; e++) {
        if (strncmp(*e, "COHORT_ALGO_", 12) == 0) {
            bench_json_string(j, NULL, *e);
        }
    }
    bench_json_end(j);
    bench_json_string(j, "mpi_library", b->run.mpi ? b->mpi_lib : NULL);
    bench_json_string(j, "mpi_absent", b->run.mpi ? NULL : bench_mpi_absent(b));
    if (b->run.mpi && b->mpi_yield >= 0) {
        bench_json_integer(j, "mpi_yield_when_idle", b->mpi_yield);
    } else {
        bench_json_string(j, "mpi_yield_when_idle", NULL);
    }
    bench_json_string(j, "mpi_yield_note", b->run.mpi ? b->yield_note : NULL);
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
int bench_json_finish(bench_t *b, int rc)
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
int bench_json_start(bench_t *b)
{
    double bad = 0;

    if (b->json_path == NULL) {
        return 0;
    }
    if (b->run.rank == 0) {
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

void bench_summary(const bench_t *b)
{
    printf("# Avg bus bandwidth: cohort %.4f GB/s", b->busbw_sum[0] / b->rows);
    if (b->mpi_rows > 0) {
        printf(", MPI %.4f GB/s (over %d sizes)", b->busbw_sum[1] / b->mpi_rows, b->mpi_rows);
    }
    printf("\n");
}
