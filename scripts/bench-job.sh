#!/bin/bash
# The whole job, launch to exit (issue 37): one mpirun of tools/job/job_cohort (cohort_init,
# the layout's groups, one allreduce in every own group, cohort_finalize; linked with libcohort
# only) against one of tools/job/job_mpi (the same with Open MPI, members only: MPI_Init,
# MPI_Comm_create_group, MPI_Allreduce, MPI_Finalize; linked with MPI only, its groups listed
# before the launch by `cohort_bench job`), alternating, RUNS of each. Prints every run, then
# the medians, the ranges and the ratio cohort / MPI of the medians.
#
#   scripts/bench-job.sh [-n W] [--layout SPEC] [--runs N] [-- mpirun options]
#
# Defaults: W=32, tp=2,pp=2,ep=2,etp=1, 5 runs, the programs of this build tree. Each launch is
# bounded (120 s); a launch that fails stops the script with its output. Timings are wall clock
# around mpirun, so they include the launcher's own start and end, alike for both.
set -u
W=32
LAYOUT=tp=2,pp=2,ep=2,etp=1
RUNS=5
TOP="$(cd "$(dirname "$0")/.." && pwd)"
while [ $# -gt 0 ]; do
    case "$1" in
    -n) W=$2; shift 2 ;;
    --layout) LAYOUT=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --) shift; break ;;
    -h | --help) sed -n "2,14p" "$0"; exit 0 ;;
    *) echo "bench-job.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
for p in tools/cohort_bench tools/job/job_cohort tools/job/job_mpi; do
    if [ ! -x "$TOP/$p" ]; then
        echo "bench-job.sh: $TOP/$p is not built (make; job_mpi needs mpicc at configure)" >&2
        exit 2
    fi
done
GROUPS_FILE=$(mktemp /tmp/bench-job.XXXXXX)
trap 'rm -f "$GROUPS_FILE"' EXIT
"$TOP/tools/cohort_bench" job --world "$W" --layout "$LAYOUT" >"$GROUPS_FILE" || exit 2
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# MPI's waits yield the core as cohort's do on an oversubscribed machine (as cohort_bench setup).
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}

one() { # $WITH: cohort | mpi; "$@": mpirun options; prints the seconds the launch took
    local t0 t1 out prog
    if [ "$WITH" = cohort ]; then
        prog=("$TOP/tools/job/job_cohort" "$LAYOUT")
    else
        prog=("$TOP/tools/job/job_mpi" "$GROUPS_FILE")
    fi
    t0=$(date +%s.%N)
    if ! out=$(timeout -k 10 120 mpirun -np "$W" --oversubscribe "$@" "${prog[@]}" 2>&1); then
        echo "bench-job.sh: the $WITH job failed at W=$W:" >&2
        echo "$out" >&2
        exit 1
    fi
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}'
}

c_times=()
m_times=()
for ((i = 1; i <= RUNS; i++)); do
    WITH=cohort; c=$(one "$@") || exit 1
    WITH=mpi; m=$(one "$@") || exit 1
    c_times+=("$c")
    m_times+=("$m")
    echo "run $i: cohort ${c} s, MPI members only ${m} s"
done
python3 - "$W" "$LAYOUT" "${c_times[*]}" "${m_times[*]}" <<'EOF'
import statistics, sys
w, layout = sys.argv[1], sys.argv[2]
c = [float(x) for x in sys.argv[3].split()]
m = [float(x) for x in sys.argv[4].split()]
cm, mm = statistics.median(c), statistics.median(m)
print(f"W={w} {layout}, {len(c)} runs each, launch to exit (s), median (min-max):")
print(f"  cohort            {cm:.3f} ({min(c):.3f}-{max(c):.3f})")
print(f"  MPI members only  {mm:.3f} ({min(m):.3f}-{max(m):.3f})")
print(f"  cohort / MPI members only: {cm / mm:.2f} (per-run ratios "
      f"{min(a / b for a, b in zip(c, m)):.2f}-{max(a / b for a, b in zip(c, m)):.2f})")
print(f"job: world={w} cohort_s={cm:.3f} mpi_s={mm:.3f} ratio={cm / mm:.3f}")
EOF
