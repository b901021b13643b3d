/*
 * cohort_bench <collective>: a size sweep of one collective on the world group, printed in
 * nccl-tests' columns. Built with MPI (BENCH_WITH_MPI), the same operation also runs through
 * MPI on MPI_COMM_WORLD in the same processes, on the same buffers, interleaved A/B/B/A
 * (cohort, MPI, MPI, cohort) so that drift over the run falls on both alike.
 *
 * Here the mode runs: set up, prepare, sweep, finish. Its jobs have a file each (sweep.h):
 * args.c, values.c, mpi.c, time.c, out.c, tail.c, bound.c.
 */
#include "sweep.h"

/* --mem cuda: the runtime and a device per rank (ranks may share one). */
static int bench_cuda_setup(bench_t *b)
{
    cohort_cuda_info_t info;
    char why[256] = "";
    int ndev = 0;

    if (bench_cudart_load(&b->cu, why, sizeof(why)) != 0 || b->cu.get_device_count(&ndev) != 0 ||
        b->cu.set_device(b->run.rank % ndev) != 0) {
        fprintf(stderr, "cohort_bench: rank %d: --mem cuda: %s\n", b->run.rank, why);
        return 1;
    }
    if (cohort_cuda_info(b->run.ctx, &info) != COHORT_OK || info.devices == 0) {
        fprintf(stderr, "cohort_bench: rank %d: --mem cuda: cohort sees %s\n", b->run.rank,
                info.reason);
        return 1;
    }
    snprintf(b->mem_note, sizeof(b->mem_note),
             "CUDA device memory (%d device(s), rank i on device i %% %d); UCX %s; CUDA IPC %s",
             ndev, ndev, info.ucx_cuda ? "takes CUDA memory" : "has no CUDA transport (staged)",
             info.ipc ? "allowed" : "off");
    return 0;
}

/* Everything before the first size: the root, the JSON file, the devices, how times are
 * reduced, the memcpy bound, the header. @return 0, or the exit status. */
static int bench_prepare(bench_t *b)
{
    double probe = 0;
    int rc;

    if (bench_colls[b->coll].has_root && b->root >= b->run.n) {
        if (b->run.rank == 0) {
            fprintf(stderr, "cohort_bench %s: --root %ld is not a rank of a world of %d\n",
                    bench_colls[b->coll].name, b->root, b->run.n);
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
    if (b->run.rank == 0 && b->text) {
        bench_header(b);
    }
    if (b->json_file != NULL) {
        bench_json_header(b);
    }
    return 0;
}

int cohort_bench_coll(int argc, char **argv)
{
    bench_t b;
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
    if (bench_run_start(&b.run, "cohort_bench", !b.no_mpi) != 0) {
        return 1;
    }
#ifdef BENCH_WITH_MPI
    if (b.run.mpi) {
        bench_mpi_facts(&b);
    }
#endif
    rc = bench_prepare(&b);
    if (rc != 0) {
        goto out_json;
    }
    rc = bench_sweep(&b);
    if (rc == 0 && b.run.rank == 0 && b.text && b.rows > 0 && b.coll != BENCH_BARRIER) {
        bench_summary(&b);
    }
out_json:
    if (b.json_file != NULL && b.json.depth > 0 && bench_json_finish(&b, rc) != 0 && rc == 0) {
        rc = 1;
    }
    if (b.json_file != NULL && b.json_file != stdout) {
        fclose(b.json_file); /* opened, but failed before the header: nothing to finish */
    }
    bench_run_end(&b.run);
    return rc;
}
