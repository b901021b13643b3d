/*
 * cohort_bench job --world W --layout SPEC: the groups of a layout, one line per (rank, group):
 * "rank kind n member...", ranks in order, for tools/job/job_mpi (scripts/bench-job.sh), which
 * then needs neither libcohort nor the layout arithmetic: the MPI side of the launch-to-exit
 * timing loads only what an MPI program loads. No launch: pure arithmetic.
 */
#include <stdlib.h>
#include <string.h>
#include "../../layout_text.h"
#include "../bench.h"

int cohort_bench_job(int argc, char **argv)
{
    const char *layout = NULL;
    cohort_layout_spec_t *spec = NULL;
    long world = 0;
    char err[256];
    int *members;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--layout") == 0 && i + 1 < argc) {
            layout = argv[++i];
        } else if (strcmp(argv[i], "--world") == 0 && i + 1 < argc) {
            if (bench_parse_long(argv[++i], 1, 1 << 20, &world) != 0) {
                world = 0; /* said below with the rest */
            }
        } else {
            fprintf(stderr,
                    "cohort_bench job: unknown option or missing value: '%s'\n"
                    "usage: cohort_bench job --world W --layout SPEC\n",
                    argv[i]);
            return 2;
        }
    }
    if (layout == NULL || world < 1 || world > 1 << 20) {
        fprintf(stderr, "cohort_bench job: --world W (1 to %d) and --layout SPEC are required\n",
                1 << 20);
        return 2;
    }
    if (cohort_layout_spec_parse(layout, (int)world, &spec, err, sizeof(err)) != COHORT_OK) {
        fprintf(stderr, "cohort_bench job: bad --layout '%s' for a world of %ld: %s\n", layout,
                world, err);
        return 2;
    }
    members = malloc(sizeof(int) * (size_t)world);
    if (members == NULL) {
        cohort_layout_spec_free(spec);
        return 1;
    }
    for (int r = 0; r < (int)world; r++) {
        for (int k = 0; k < cohort_layout_spec_kind_count(spec); k++) {
            int n =
                cohort_tools_rank_group(spec, cohort_layout_spec_kind_name(spec, k), r, members);
            if (n <= 0) {
                continue;
            }
            printf("%d %d %d", r, k, n);
            for (int i = 0; i < n; i++) {
                printf(" %d", members[i]);
            }
            printf("\n");
        }
    }
    free(members);
    cohort_layout_spec_free(spec);
    return 0;
}
