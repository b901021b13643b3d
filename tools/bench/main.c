/*
 * cohort_bench <mode> [options]
 *   allreduce|bcast|reduce|allgather|reduce_scatter|alltoall|barrier   collective sweep
 *   algorithms                                                          the algorithm table
 *   p2p | groups [--count N]                                            micro benchmarks
 *   setup --layout SPEC                                                 group setup cost
 *   job --world W --layout SPEC                                         a layout's groups, listed
 *   --model --world N --layout SPEC                                     scale model (no launch)
 * Each job is a folder: sweep/ (the collectives), micro/ (p2p, groups), setup/, model/, job/;
 * what they share is here beside this file (bench.h). The listings below need no job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: cohort_bench MODE [options]\n"
               "  MODE: allreduce bcast reduce allgather reduce_scatter alltoall barrier\n"
               "        (collective size sweep; run under mpirun; see --help of each)\n"
               "        algorithms               (the collective algorithms and their names)\n"
               "        config                   (the COHORT_* settings, defaults, values now)\n"
               "        --version                (the library version)\n"
               "        p2p                      (latency and bandwidth, ranks 0 and 1)\n"
               "        groups [--count N]       (member-only creation of N groups per rank)\n"
               "        setup --layout SPEC      (time to create a layout's groups and run a\n"
               "                                  first allreduce in each; under mpirun)\n"
               "        job --world W --layout SPEC   (every rank's groups, one line each:\n"
               "                                  'rank kind n member...'; for tools/job/job_mpi)\n"
               "        --model --world N --layout SPEC   (scale model; no launcher needed)\n");
}

int main(int argc, char **argv)
{
    static const char *const colls[] = {"allreduce",      "bcast",    "reduce", "allgather",
                                        "reduce_scatter", "alltoall", "barrier"};

    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--model") == 0 || strcmp(argv[1], "model") == 0) {
        return cohort_bench_model(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("cohort_bench, libcohort %s (header %d.%d)\n", cohort_version(),
               COHORT_VERSION_MAJOR, COHORT_VERSION_MINOR);
        return 0;
    }
    if (strcmp(argv[1], "config") == 0) {
        cohort_setting_t set;

        printf("%-34s %-10s %s\n", "setting (now)", "default", "values: meaning");
        for (int i = 0; i < cohort_setting_count(); i++) {
            if (cohort_setting_info(i, &set) == COHORT_OK) {
                const char *now = strchr(set.name, '<') ? NULL : getenv(set.name);
                printf("%-34s %-10s %s: %s\n", set.name,
                       set.default_value[0] ? set.default_value : "-", set.values, set.description);
                if (now != NULL) {
                    printf("%-34s set to %s\n", "", now);
                }
            }
        }
        printf("\nalgorithm parameters: cohort_bench algorithms\n");
        return 0;
    }
    if (strcmp(argv[1], "algorithms") == 0) {
        cohort_algo_info_t info;

        printf("%-3s %-15s %-22s %s\n", "id", "collective", "name", "description");
        for (int i = 0; i < cohort_algo_count(); i++) {
            if (cohort_algo_info(i, &info) == COHORT_OK) {
                printf("%-3d %-15s %-22s %s\n", info.id, info.collective, info.name,
                       info.description);
            }
            for (int k = 0; k < cohort_algo_param_count(i); k++) {
                cohort_algo_param_t p;
                if (cohort_algo_param_info(i, k, &p) == COHORT_OK) {
                    const char *now = getenv(p.env);
                    printf("      %s=%s%s (default %zu, %zu..%zu%s): %s\n", p.env,
                           now != NULL ? now : "", now != NULL ? " set" : "", p.default_value,
                           p.min, p.max, p.is_bytes ? " bytes" : "", p.description);
                }
            }
        }
        printf(
            "\nforce one with COHORT_ALGO_<COLLECTIVE>=<name>, e.g. COHORT_ALGO_ALLREDUCE=ring,\n"
            "or by size: COHORT_ALGO_ALLREDUCE=0-64k:recursive_doubling,64k-inf:ring (bytes =\n"
            "count x dtype size as the call counts it; sizes not covered keep the defaults);\n"
            "a rule may also say total (bytes x group size), n=A-B, pow2 or notpow2:\n"
            "COHORT_ALGO_ALLGATHER=n=2:0-4k+1:shm,total:1m-inf:ring\n");
        return 0;
    }
    if (strcmp(argv[1], "p2p") == 0) {
        return cohort_bench_p2p(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "groups") == 0) {
        return cohort_bench_groups(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "setup") == 0) {
        return cohort_bench_setup(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "job") == 0) {
        return cohort_bench_job(argc - 1, argv + 1);
    }
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) {
        if (strcmp(argv[1], colls[i]) == 0) {
            return cohort_bench_coll(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "cohort_bench: unknown mode '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
