#!/bin/bash
# Before and after: scripts/bench-table.sh's cells for two built trees, interleaved. Each cell
# runs BENCH_REPEATS times per tree (default 5, each its own mpirun), the trees alternating
# A B, B A, ... so that a change in the machine's load falls on both; printed per cell: the
# median ratio (Open MPI time / cohort time in the same run, above 1 cohort is faster) and its
# spread (min-max), A's then B's. A cell where B's median is below A's minimum is marked "<":
# slower by more than the run-to-run spread, to be run again before it is believed.
#
#   bash scripts/bench-ab.sh TREE_A TREE_B [RANKS...]   # default ranks: 2 4
# A tree is a built checkout (git worktree add /tmp/a COMMIT; ./autogen.sh && ./configure &&
# make). Settings: BENCH_REPEATS, BENCH_SIZES ("512 64K 1M 16M"), BENCH_COLLS, BENCH_CSV_DIR;
# COHORT_* settings in the environment go to the ranks of both trees.
set -u
[ $# -ge 2 ] || { echo "usage: scripts/bench-ab.sh TREE_A TREE_B [RANKS...]" >&2; exit 2; }
a=$(cd "$1" && pwd) || exit 1
b=$(cd "$2" && pwd) || exit 1
shift 2
for t in "$a" "$b"; do
    [ -x "$t/tools/cohort_bench" ] || { echo "bench-ab: $t is not built (tools/cohort_bench)"; exit 1; }
done
reps=${BENCH_REPEATS:-5}
sizes=${BENCH_SIZES:-512 64K 1M 16M}
colls=${BENCH_COLLS:-allreduce allgather reduce_scatter bcast alltoall}
ranks=${*:-2 4}
raw=${BENCH_CSV_DIR:-$(mktemp -d /tmp/cohort-ab.XXXXXX)}
mkdir -p "$raw"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
pass=()
for v in $(env | grep -o '^COHORT_[A-Z0-9_]*' | grep -v '^COHORT_PLUGIN_PATH$'); do
    pass+=(-x "$v")
done

# median and spread of the numbers on stdin: "median min max"
stats() {
    sort -g | awk '{v[NR] = $1} END {
        if (NR == 0) { print "n/a n/a n/a"; exit }
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.2f %.2f %.2f\n", m, v[1], v[NR] }'
}

# One run of a cell with tree $1, its CSV rows appended to $2.
run() { # tree file coll np size bind...
    local tree=$1 f=$2 c=$3 np=$4 s=$5
    shift 5
    timeout 300 mpirun "${root[@]}" --oversubscribe "$@" --mca mpi_yield_when_idle 1 -np "$np" \
        -x COHORT_PLUGIN_PATH="$tree/.libs" "${pass[@]}" "$tree/tools/cohort_bench" "$c" \
        -b "$s" -e "$s" --csv 2>/dev/null | grep -E '^[0-9]' >>"$f"
}

echo "# A = $a ($(git -C "$a" describe --always --dirty 2>/dev/null)), B = $b ($(git -C "$b" describe --always --dirty 2>/dev/null))"
echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $reps runs per cell and tree, interleaved"
echo "# ratio = Open MPI time / cohort time: median (min-max), A / B; '<': B's median below A's minimum"
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
            fa=$raw/A.$c.$np.$s.csv
            fb=$raw/B.$c.$np.$s.csv
            : >"$fa"
            : >"$fb"
            for r in $(seq "$reps"); do
                if [ $((r % 2)) = 1 ]; then
                    run "$a" "$fa" "$c" "$np" "$s" "${bind[@]}"
                    run "$b" "$fb" "$c" "$np" "$s" "${bind[@]}"
                else
                    run "$b" "$fb" "$c" "$np" "$s" "${bind[@]}"
                    run "$a" "$fa" "$c" "$np" "$s" "${bind[@]}"
                fi
            done
            read -r am alo ahi < <(cut -d, -f12 "$fa" | stats)
            read -r bm blo bhi < <(cut -d, -f12 "$fb" | stats)
            mark=$(awk -v b="$bm" -v a="$alo" 'BEGIN { print (b + 0 < a + 0 ? " <" : "") }')
            printf ' %s (%s-%s) / %s (%s-%s)%s |' "$am" "$alo" "$ahi" "$bm" "$blo" "$bhi" "$mark"
        done
        printf '\n'
    done
done
echo
echo "# raw rows: $raw"
