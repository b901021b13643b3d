#!/bin/sh
# Layout setup cost under every exchange plugin, side by side.
#
#   tools/bench/setup_all.sh -np 16 --layout tp=2,pp=2 [--iters N] [-- MPIRUN_ARGS...]
#
# The exchange plugin is read from COHORT_PMIX_PLUGIN once, at cohort_init, so one process can
# measure only one plugin: this runs `cohort_bench setup` once per plugin (dmodex, fence,
# global), with Open MPI side by side in the dmodex run only (--no-mpi in the others: its
# figures do not depend on cohort's plugin), and merges the runs' "setup:" lines into one table.
# Each run's full report goes to stderr as it comes.
#
# Environment: MPIRUN (default mpirun), COHORT_BENCH (default: cohort_bench next to this
# script's tools/ directory, else on PATH), COHORT_PLUGIN_PATH (passed on to the ranks).
set -u

np=
layout=
iters=1
while [ $# -gt 0 ]; do
    case $1 in
    -np | -n | --layout | --iters)
        [ $# -ge 2 ] || { echo "setup_all.sh: $1 needs a value" >&2; exit 2; }
        case $1 in
        --layout) layout=$2 ;;
        --iters) iters=$2 ;;
        *) np=$2 ;;
        esac
        shift 2 ;;
    --) shift; break ;;
    -h | --help)
        sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
        exit 0 ;;
    *) echo "setup_all.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
if [ -z "$np" ] || [ -z "$layout" ]; then
    echo "setup_all.sh: -np N and --layout SPEC are required" >&2
    exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
bench=${COHORT_BENCH:-}
if [ -z "$bench" ]; then
    if [ -x "$here/../cohort_bench" ]; then bench="$here/../cohort_bench"; else bench=cohort_bench; fi
fi
mpirun=${MPIRUN:-mpirun}
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
export COHORT_PLUGIN_PATH="${COHORT_PLUGIN_PATH:-}"

lines=
status=0
for plugin in dmodex fence global; do
    mpi=--no-mpi
    [ "$plugin" = dmodex ] && mpi=
    echo "== COHORT_PMIX_PLUGIN=$plugin" >&2
    # shellcheck disable=SC2086
    out=$(COHORT_PMIX_PLUGIN=$plugin "$mpirun" $root --oversubscribe --bind-to none \
        -x COHORT_PMIX_PLUGIN -x COHORT_PLUGIN_PATH -np "$np" "$@" \
        "$bench" setup --layout "$layout" --iters "$iters" $mpi </dev/null)
    rc=$?
    printf '%s\n' "$out" >&2
    line=$(printf '%s\n' "$out" | grep '^setup: ')
    if [ $rc -ne 0 ] || [ -z "$line" ]; then
        echo "setup_all.sh: the $plugin run failed (rc $rc)" >&2
        status=1
        line="setup: plugin=$plugin failed=rc$rc"
    fi
    lines="$lines$line
"
done

printf '%s' "$lines" | awk -v layout="$layout" -v np="$np" '
function get(key,   i, kv) {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == key) return kv[2] }
    return ""
}
BEGIN {
    printf "setup of layout %s on %s ranks, largest over ranks, iteration 1 (cold)\n", layout, np
    printf "%-18s %7s %12s %12s %14s %9s %8s %10s %12s\n", "", "groups", "create us",
        "1st allred", "create+1st us", "endpoints", "lookups", "wire us", "create msgs"
}
{
    p = get("plugin")
    if (get("failed") != "") { printf "cohort %-11s failed (%s)\n", p, get("failed"); next }
    printf "cohort %-11s %7s %12s %12s %14.1f %9s %8s %10s %12s\n", p, get("groups"),
        get("create_us"), get("first_us"), get("create_us") + get("first_us"),
        get("endpoints"), get("lookups"), get("wire_us"), get("create_msgs") "/" get("create_eps")
    if (get("mpi_classic_create_us") != "") {
        cg = get("classic_groups"); g = get("groups")
        cc = get("mpi_classic_create_us"); cf = get("mpi_classic_first_us")
        mc = get("mpi_members_create_us"); mf = get("mpi_members_first_us")
        cohort_c = get("create_us"); cohort_t = get("create_us") + get("first_us")
    }
}
END {
    if (cc == "") exit
    printf "%-18s %7s %12s %12s %14.1f %9s %8s %10s %12s\n", "MPI classic", cg, cc, cf,
        cc + cf, "-", "-", "-", "-"
    printf "%-18s %7s %12s %12s %14.1f %9s %8s %10s %12s\n", "MPI members only", g, mc, mf,
        mc + mf, "-", "-", "-", "-"
    printf "ratios (against cohort dmodex): MPI classic / cohort create %.1fx; ", cc / cohort_c
    printf "MPI members / cohort create+1st %.1fx\n", (mc + mf) / cohort_t
    printf "wire us: address lookups + endpoint creation, summed over a rank'"'"'s peers\n"
    printf "create msgs: messages sent / endpoints wired by cohort_layout_create (must be 0/0)\n"
}'
exit $status
