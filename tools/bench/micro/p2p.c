/*
 * cohort_bench p2p: ping-pong latency and streaming bandwidth between world ranks 0 and 1
 * (side by side with MPI_Send/MPI_Recv when built with MPI).
 */
#include <stdlib.h>
#include <string.h>
#ifdef BENCH_WITH_MPI
#include <mpi.h>
#endif
#include "../bench.h"

#define MICRO_WINDOW 64

static int micro_check(cohort_status_t st, const char *what)
{
    if (st != COHORT_OK) {
        fprintf(stderr, "cohort_bench: %s: %s\n", what, cohort_strerror(st));
        return 1;
    }
    return 0;
}

/* Seconds per round trip of `bytes`, ranks 0 and 1. */
static int micro_pingpong_cohort(cohort_group_t *w, int me, void *buf, size_t bytes, int iters,
                                 double *t)
{
    double start = bench_now();

    for (int i = 0; i < iters; i++) {
        if (me == 0) {
            if (micro_check(cohort_send(w, buf, bytes, COHORT_UINT8, 1, 1), "send") ||
                micro_check(cohort_recv(w, buf, bytes, COHORT_UINT8, 1, 1), "recv")) {
                return 1;
            }
        } else {
            if (micro_check(cohort_recv(w, buf, bytes, COHORT_UINT8, 0, 1), "recv") ||
                micro_check(cohort_send(w, buf, bytes, COHORT_UINT8, 0, 1), "send")) {
                return 1;
            }
        }
    }
    *t = (bench_now() - start) / iters;
    return 0;
}

/* Seconds per window of MICRO_WINDOW messages from 0 to 1, each followed by a 1-byte ack. */
static int micro_stream_cohort(cohort_group_t *w, int me, void *buf, size_t bytes, int iters,
                               double *t)
{
    cohort_request_t *req[MICRO_WINDOW];
    char ack = 0;
    double start = bench_now();

    for (int i = 0; i < iters; i++) {
        for (int k = 0; k < MICRO_WINDOW; k++) {
            cohort_status_t st = me == 0 ? cohort_isend(w, buf, bytes, COHORT_UINT8, 1, 2, &req[k])
                                         : cohort_irecv(w, buf, bytes, COHORT_UINT8, 0, 2, &req[k]);
            if (micro_check(st, "post")) {
                return 1;
            }
        }
        for (int k = 0; k < MICRO_WINDOW; k++) {
            if (micro_check(cohort_wait(req[k]), "wait")) {
                return 1;
            }
            cohort_request_free(req[k]);
        }
        if (micro_check(me == 0 ? cohort_recv(w, &ack, 1, COHORT_INT8, 1, 3)
                                : cohort_send(w, &ack, 1, COHORT_INT8, 0, 3),
                        "ack")) {
            return 1;
        }
    }
    *t = (bench_now() - start) / iters;
    return 0;
}

#ifdef BENCH_WITH_MPI
static void micro_pingpong_mpi(int me, void *buf, size_t bytes, int iters, double *t)
{
    double start = bench_now();

    for (int i = 0; i < iters; i++) {
        if (me == 0) {
            MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    *t = (bench_now() - start) / iters;
}

static void micro_stream_mpi(int me, void *buf, size_t bytes, int iters, double *t)
{
    MPI_Request req[MICRO_WINDOW];
    char ack = 0;
    double start = bench_now();

    for (int i = 0; i < iters; i++) {
        for (int k = 0; k < MICRO_WINDOW; k++) {
            if (me == 0) {
                MPI_Isend(buf, (int)bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[k]);
            } else {
                MPI_Irecv(buf, (int)bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[k]);
            }
        }
        MPI_Waitall(MICRO_WINDOW, req, MPI_STATUSES_IGNORE);
        if (me == 0) {
            MPI_Recv(&ack, 1, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(&ack, 1, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
        }
    }
    *t = (bench_now() - start) / iters;
}
#endif

int cohort_bench_p2p(int argc, char **argv)
{
    static const size_t sizes[] = {8, 64, 1024, 8192, 65536, 1 << 20, 4 << 20, 16 << 20};
    bench_run_t run;
    cohort_group_t *w;
    int me, rc = 0;
    void *buf;

    if (argc > 1) {
        fprintf(stderr, "cohort_bench p2p: unknown option '%s' (it takes none)\n", argv[1]);
        return 2;
    }
    if (bench_run_start(&run, "cohort_bench p2p", 1) != 0) {
        return 1;
    }
    me = run.rank;
    w = run.world;
    if (run.n != 2) {
        if (me == 0) {
            fprintf(stderr, "cohort_bench p2p: run with exactly 2 ranks\n");
        }
        bench_run_end(&run);
        return 2;
    }
    buf = calloc(1, 16 << 20);
    if (buf == NULL) {
        fprintf(stderr, "cohort_bench p2p: rank %d: out of memory\n", me);
        return bench_run_abort(&run);
    }
    if (me == 0) {
        printf("# p2p between ranks 0 and 1; latency = half a round trip; bandwidth streams %d "
               "messages then a 1-byte ack\n",
               MICRO_WINDOW);
        printf("%10s %12s %12s %12s %12s", "size", "lat_us", "bw_GB/s", "mpi_lat_us",
               "mpi_bw_GB/s");
        printf("\n");
    }
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]) && rc == 0; s++) {
        size_t bytes = sizes[s];
        int iters = bytes <= 65536 ? 2000 : bytes <= (1 << 20) ? 50 : 8;
        double lat = 0, win = 0, mlat = 0, mwin = 0;

        rc |= micro_pingpong_cohort(w, me, buf, bytes, iters / 10 + 1, &lat); /* warm-up */
        rc |= micro_pingpong_cohort(w, me, buf, bytes, iters, &lat);
        rc |= micro_stream_cohort(w, me, buf, bytes, iters / MICRO_WINDOW + 2, &win);
#ifdef BENCH_WITH_MPI
        micro_pingpong_mpi(me, buf, bytes, iters / 10 + 1, &mlat);
        micro_pingpong_mpi(me, buf, bytes, iters, &mlat);
        micro_stream_mpi(me, buf, bytes, iters / MICRO_WINDOW + 2, &mwin);
#endif
        if (me == 0 && rc == 0) {
            printf("%10zu %12.2f %12.2f", bytes, lat / 2 * 1e6, bytes * MICRO_WINDOW / win / 1e9);
            if (mlat > 0) {
                printf(" %12.2f %12.2f", mlat / 2 * 1e6, bytes * MICRO_WINDOW / mwin / 1e9);
            } else {
                printf(" %12s %12s", "n/a", "n/a");
            }
            printf("\n");
        }
    }
    free(buf);
    bench_run_end(&run);
    return rc;
}
