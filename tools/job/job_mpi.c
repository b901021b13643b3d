/*
 * job_mpi GROUPS-FILE: the same job as job_cohort with Open MPI, members only, for
 * scripts/bench-job.sh: MPI_Init, then for each of this rank's groups (the lines "rank kind n
 * member..." of `cohort_bench job`, kinds in order) MPI_Comm_create_group (tag: the kind) and
 * one MPI_Allreduce of one float, checked, then MPI_Finalize. Links MPI only, as an MPI program
 * would; the layout's arithmetic was done before the launch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank, size, r, kind, n, bad = 0, *members;
    MPI_Group world_group, g;
    FILE *f;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    f = argc == 2 ? fopen(argv[1], "r") : NULL;
    members = malloc(sizeof(int) * (size_t)size);
    if (f == NULL || members == NULL) {
        fprintf(stderr, "usage: job_mpi GROUPS-FILE (from cohort_bench job; under mpirun)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    while (fscanf(f, "%d %d %d", &r, &kind, &n) == 3) {
        float one = 1.0f, sum = 0.0f;
        MPI_Comm c;

        if (n < 1 || n > size) {
            fprintf(stderr, "job_mpi: %s: a group of %d members in a world of %d\n", argv[1], n,
                    size);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        for (int i = 0; i < n; i++) {
            if (fscanf(f, "%d", &members[i]) != 1) {
                fprintf(stderr, "job_mpi: %s: a line ends early\n", argv[1]);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
        if (r != rank) {
            continue;
        }
        MPI_Group_incl(world_group, n, members, &g);
        MPI_Comm_create_group(MPI_COMM_WORLD, g, kind, &c);
        MPI_Group_free(&g);
        MPI_Allreduce(&one, &sum, 1, MPI_FLOAT, MPI_SUM, c);
        if (sum != (float)n) {
            fprintf(stderr, "job_mpi: rank %d: kind %d allreduce gave %g, not %d\n", rank, kind,
                    sum, n);
            bad = 1;
        }
        MPI_Comm_free(&c);
    }
    fclose(f);
    free(members);
    MPI_Group_free(&world_group);
    MPI_Finalize();
    return bad;
}
