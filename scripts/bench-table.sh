#!/bin/bash
# The five-collective table of issue 8: allreduce, allgather, reduce_scatter, bcast, alltoall at
# 512 B, 64 KiB, 1 MiB and 16 MiB, float32 SUM, side by side with Open MPI in the same processes
# (cohort_bench), at 2 ranks pinned to cores and 4 ranks oversubscribed. Each cell is run
# BENCH_REPEATS times (default 5, each its own mpirun); printed: the median ratio (Open MPI time /
# cohort time, above 1 cohort is faster) and the spread (min-max), then cohort's median busbw.
#
#   bash scripts/bench-table.sh [RANKS...]       # default: 2 4; from a built tree
#   bash scripts/bench-table.sh --against TREE [RANKS...]
#                                                # before and after: TREE (another built
#                                                # checkout, e.g. git worktree add /tmp/a REV)
#                                                # and this one, run by run in turn (A B, B A,
#                                                # ...) so that the machine's load falls on
#                                                # both; each cell "A / B", and "<" where this
#                                                # tree's median is below TREE's minimum
#                                                # (slower beyond the spread: run it again)
# Settings: BENCH_REPEATS, BENCH_SIZES ("512 64K 1M 16M"), BENCH_COLLS, BENCH_CSV_DIR (keep the
# raw rows there); COHORT_* settings in the environment are passed to the ranks. Benchmark a
# quiet machine: other load shows up as noise in both columns.
set -u
cd "$(dirname "$0")/.." || exit 1
top=$PWD
against=
case "${1:-}" in
-h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
if [ "${1:-}" = --against ]; then
    against=$(cd "${2:?--against needs a built tree}" && pwd) || exit 1
    shift 2
fi
reps=${BENCH_REPEATS:-5}
sizes=${BENCH_SIZES:-512 64K 1M 16M}
colls=${BENCH_COLLS:-allreduce allgather reduce_scatter bcast alltoall}
ranks=${*:-2 4}
for np in $ranks; do
    case "$np" in
    '' | *[!0-9]*) echo "bench-table: '$np' is not a rank count (see --help)" >&2; exit 2 ;;
    esac
done
raw=${BENCH_CSV_DIR:-$(mktemp -d /tmp/cohort-table.XXXXXX)}
mkdir -p "$raw"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
pass=()
for v in $(env | grep -o '^COHORT_[A-Z0-9_]*' | grep -v '^COHORT_PLUGIN_PATH$'); do
    pass+=(-x "$v")
done
for t in "$top" ${against:+"$against"}; do
    [ -x "$t/tools/cohort_bench" ] || { echo "bench-table: build $t first (tools/cohort_bench missing)"; exit 1; }
done

# median and spread of the numbers on stdin: "median min-max"
stats() {
    sort -g | awk '{v[NR] = $1} END {
        if (NR == 0) { print "n/a n/a"; exit }
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.2f %.2f-%.2f\n", m, v[1], v[NR] }'
}

# One run of cell ($c, $np, $s) with the cohort of tree $1, its CSV rows appended to $2.
run() { # tree file
    timeout 300 mpirun "${root[@]}" --oversubscribe "${bind[@]}" \
        --mca mpi_yield_when_idle 1 -np "$np" -x COHORT_PLUGIN_PATH="$1/.libs" "${pass[@]}" \
        "$1/tools/cohort_bench" "$c" -b "$s" -e "$s" --csv 2>/dev/null |
        grep -E '^[0-9]' >>"$2"
}

echo "# cohort $(git -C "$top" describe --always --dirty 2>/dev/null), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$against" ] ||
    echo "# A = $against ($(git -C "$against" describe --always --dirty 2>/dev/null)), B = this tree; each cell A / B, in turn run by run; '<': B's median below A's minimum"
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
            fa=$raw/A.$c.$np.$s.csv
            : >"$f"
            [ -z "$against" ] || : >"$fa"
            for r in $(seq "$reps"); do
                if [ -z "$against" ]; then
                    run "$top" "$f"
                elif [ $((r % 2)) = 1 ]; then
                    run "$against" "$fa"
                    run "$top" "$f"
                else
                    run "$top" "$f"
                    run "$against" "$fa"
                fi
            done
            read -r rmed rspread < <(cut -d, -f12 "$f" | stats)
            read -r bmed _ < <(cut -d, -f8 "$f" | stats)
            if [ -z "$against" ]; then
                printf ' %s (%s), %s |' "$rmed" "$rspread" "$bmed"
            else
                read -r amed aspread < <(cut -d, -f12 "$fa" | stats)
                mark=$(awk -v b="$rmed" -v a="${aspread%-*}" 'BEGIN { print (b + 0 < a + 0 ? " <" : "") }')
                printf ' %s (%s) / %s (%s)%s |' "$amed" "$aspread" "$rmed" "$rspread" "$mark"
            fi
        done
        printf '\n'
    done
done
echo
echo "# raw rows: $raw"
