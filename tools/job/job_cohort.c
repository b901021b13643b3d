/*
 * job_cohort SPEC: one whole job's work with cohort, for a launch-to-exit timing
 * (scripts/bench-job.sh, against job_mpi): cohort_init, the layout's groups
 * (cohort_layout_create), one allreduce of one float in every group this rank is in, kinds in
 * order, cohort_finalize. Every sum is checked; silent unless something fails. Links libcohort
 * only, as a program that uses cohort without MPI would. JOB_TIMES=1: rank 0 prints how long
 * each phase took there (where a launch's time goes; it costs nothing otherwise).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cohort.h>

static double job_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    cohort_context_t *ctx = NULL;
    cohort_layout_spec_t *spec = NULL;
    cohort_layout_t *layout = NULL;
    cohort_status_t st;
    char err[256];
    int rc = 1, times = getenv("JOB_TIMES") != NULL, rank = -1;
    double t[5] = {0, 0, 0, 0, 0};

    if (argc != 2) {
        fprintf(stderr, "usage: job_cohort LAYOUT-SPEC (under a launcher)\n");
        return 2;
    }
    t[0] = job_now();
    st = cohort_init(&ctx);
    t[1] = job_now();
    if (st != COHORT_OK) {
        fprintf(stderr, "job_cohort: cohort_init failed: %s\n", cohort_strerror(st));
        return 1;
    }
    rank = cohort_world_rank(ctx);
    if (cohort_layout_spec_parse(argv[1], cohort_world_size(ctx), &spec, err, sizeof(err)) !=
        COHORT_OK) {
        fprintf(stderr, "job_cohort: bad layout '%s': %s\n", argv[1], err);
        rc = 2;
        goto out;
    }
    st = cohort_layout_create(ctx, argv[1], &layout);
    t[2] = job_now();
    if (st != COHORT_OK) {
        fprintf(stderr, "job_cohort: cohort_layout_create: %s\n", cohort_strerror(st));
        goto out;
    }
    for (int k = 0; k < cohort_layout_spec_kind_count(spec); k++) {
        cohort_group_t *g = cohort_layout_group(layout, cohort_layout_spec_kind_name(spec, k));
        float one = 1.0f, sum = 0.0f;

        if (g == NULL) {
            continue;
        }
        st = cohort_allreduce(g, &one, &sum, 1, COHORT_FLOAT32, COHORT_SUM);
        if (st != COHORT_OK || sum != (float)cohort_group_size(g)) {
            fprintf(stderr, "job_cohort: rank %d: %s allreduce: %s, sum %g of %d\n",
                    cohort_world_rank(ctx), cohort_layout_spec_kind_name(spec, k),
                    cohort_strerror(st), sum, cohort_group_size(g));
            goto out;
        }
    }
    rc = 0;
out:
    t[3] = job_now();
    if (layout != NULL) {
        cohort_layout_free(layout);
    }
    cohort_layout_spec_free(spec);
    cohort_finalize(ctx);
    t[4] = job_now();
    if (times && rc == 0 && rank == 0) {
        fprintf(stderr,
                "job_cohort: rank 0: init %.1f ms, layout %.3f ms, first allreduces %.1f ms, "
                "finalize %.1f ms\n",
                (t[1] - t[0]) * 1e3, (t[2] - t[1]) * 1e3, (t[3] - t[2]) * 1e3, (t[4] - t[3]) * 1e3);
    }
    return rc;
}
