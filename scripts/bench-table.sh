#!/bin/bash
# The five-collective table of issue 8: allreduce, allgather, reduce_scatter, bcast, alltoall at
# 512 B, 64 KiB, 1 MiB and 16 MiB, float32 SUM, side by side with Open MPI in the same processes
# (cohort_bench), at 2 ranks pinned to cores and 4 ranks oversubscribed. Each cell is run
# BENCH_REPEATS times (default 5, each its own mpirun); printed: the median ratio (Open MPI time /
# cohort time, above 1 cohort is faster) and the spread (min-max), then cohort's median busbw.
#
#   bash scripts/bench-table.sh [RANKS...]       # default: 2 4; from a built tree
# Settings: BENCH_REPEATS, BENCH_SIZES ("512 64K 1M 16M"), BENCH_COLLS, BENCH_CSV_DIR (keep the
# raw rows there); COHORT_* settings in the environment are passed to the ranks. Benchmark a
# quiet machine: other load shows up as noise in both columns.
set -u
cd "$(dirname "$0")/.." || exit 1
top=$PWD
reps=${BENCH_REPEATS:-5}
sizes=${BENCH_SIZES:-512 64K 1M 16M}
colls=${BENCH_COLLS:-allreduce allgather reduce_scatter bcast alltoall}
ranks=${*:-2 4}
raw=${BENCH_CSV_DIR:-$(mktemp -d /tmp/cohort-table.XXXXXX)}
mkdir -p "$raw"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
pass=()
for v in $(env | grep -o '^COHORT_[A-Z0-9_]*' | grep -v '^COHORT_PLUGIN_PATH$'); do
    pass+=(-x "$v")
done
[ -x tools/cohort_bench ] || { echo "bench-table: build first (tools/cohort_bench missing)"; exit 1; }

# median and spread of the numbers on stdin: "median min-max"
stats() {
    sort -g | awk '{v[NR] = $1} END {
        if (NR == 0) { print "n/a n/a"; exit }
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.2f %.2f-%.2f\n", m, v[1], v[NR] }'
}

echo "# cohort $(git -C "$top" describe --always --dirty 2>/dev/null), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
[ ${#pass[@]} -gt 0 ] && echo "# settings: $(env | grep '^COHORT_' | grep -v '^COHORT_PLUGIN_PATH=' | tr '\n' ' ')"
echo "# $reps runs per cell; ratio = Open MPI time / cohort time (median, min-max); busbw GB/s (median)"
for np in $ranks; do
    bind=(--bind-to none)
    [ "$np" -le "$(nproc)" ] && bind=(--bind-to core)
    echo
    echo "## $np ranks (${bind[1]})"
    echo
    printf '| collective |'
    for s in $sizes; do printf ' %s |' "$s"; done
    printf '\n|---|'
    for s in $sizes; do printf -- '---|'; done
    printf '\n'
    for c in $colls; do
        printf '| %s |' "$c"
        for s in $sizes; do
            f=$raw/$c.$np.$s.csv
            : >"$f"
            for _ in $(seq "$reps"); do
                timeout 300 mpirun "${root[@]}" --oversubscribe "${bind[@]}" \
                    --mca mpi_yield_when_idle 1 -np "$np" -x COHORT_PLUGIN_PATH="$top/.libs" "${pass[@]}" \
                    tools/cohort_bench "$c" -b "$s" -e "$s" --csv 2>/dev/null |
                    grep -E '^[0-9]' >>"$f"
            done
            read -r rmed rspread < <(cut -d, -f12 "$f" | stats)
            read -r bmed _ < <(cut -d, -f8 "$f" | stats)
            printf ' %s (%s), %s |' "$rmed" "$rspread" "$bmed"
        done
        printf '\n'
    done
done
echo
echo "# raw rows: $raw"
