/* The smallest cohort program: build with `cc hello.c $(pkg-config --cflags --libs cohort)`,
 * run with `mpirun -np 4 ./a.out` (or alone, as a singleton). */
#include <stdio.h>
#include <cohort.h>

int main(void)
{
    cohort_context_t *ctx;
    cohort_status_t st = cohort_init(&ctx);

    if (st != COHORT_OK) {
        fprintf(stderr, "cohort_init: %s\n", cohort_strerror(st));
        return 1;
    }
    st = cohort_barrier(cohort_world(ctx));
    printf("rank %d of %d: barrier %s\n", cohort_world_rank(ctx), cohort_world_size(ctx),
           cohort_strerror(st));
    cohort_finalize(ctx);
    return st == COHORT_OK ? 0 : 1;
}
