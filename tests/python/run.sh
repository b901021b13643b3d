#!/bin/sh
# The Python tests: each line below is one run of a test under mpirun (or alone), with
# /usr/bin/python3 unless PYTHON says otherwise, under a timeout. A test whose module (numpy,
# torch) is missing prints a SKIP line and counts as skipped, not failed; with
# PY_REQUIRE_ALL=1 (scripts/test.sh, which installs them) a SKIP line or exit 77 is a failure:
# no torch coverage is no pass.
#   tests/python/run.sh            from the source tree (the package of this tree is tested)
set -u
cd "$(dirname "$0")"
py=${PYTHON:-/usr/bin/python3}
mpirun=${MPIRUN:-mpirun}
# TEST_TIMEOUT per run, times the load per core (1-4) on a machine busier than its cores
# (tests/mpi/launch.sh does the same).
limit=${TEST_TIMEOUT:-300}
scale=$(awk -v c="$(nproc 2>/dev/null || echo 1)" \
    '{ s = int($1 / c + 0.999); print (s < 1 ? 1 : (s > 4 ? 4 : s)) }' /proc/loadavg 2>/dev/null)
[ -n "$scale" ] || scale=1
limit=$((limit * scale))
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
# The build tree's plugins, unless the caller chose (make check-python sets it).
: "${COHORT_PLUGIN_PATH:=$(cd ../.. && pwd)/.libs}"
export COHORT_PLUGIN_PATH
pass=0 fail=0 skip=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
while read -r np prog envs; do
    [ -n "$np" ] || continue
    echo "== python: $prog: $np $envs"
    t0=$(date +%s)
    if [ "$np" = singleton ]; then
        # shellcheck disable=SC2086
        env -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u PMIX_SERVER_URI4 $envs \
            timeout -k 5 "$limit" "$py" "$prog" </dev/null >"$out" 2>&1
    else
        # shellcheck disable=SC2086
        timeout -k 5 "$limit" env $envs "$mpirun" $root --oversubscribe --bind-to none \
            -x COHORT_PLUGIN_PATH -np "$np" "$py" "$prog" </dev/null >"$out" 2>&1
    fi
    rc=$?
    cat "$out"
    if [ "${PY_REQUIRE_ALL:-0}" = 1 ] && { [ "$rc" = 77 ] || grep -q '^SKIP:' "$out"; }; then
        echo "== python: $prog: a SKIP with PY_REQUIRE_ALL=1: counted as a failure"
        rc=1
    fi
    # How long it took, said (never asserted): where the phase's time goes.
    echo "== python: $prog: $np $envs: rc $rc after $(($(date +%s) - t0)) s"
    case $rc in
    0) pass=$((pass + 1)) ;;
    77) skip=$((skip + 1)) ;;
    *)
        echo "== python: $prog: $np $envs FAILED (rc $rc; 124 or 137: timed out after $limit s)"
        fail=$((fail + 1))
        ;;
    esac
done <<'RUNS'
singleton test_core.py
3 test_core.py
4 test_core.py COHORT_CHECK=1 COHORT_PROGRESS=block
singleton test_exit.py
4 test_torch.py
2 test_torch.py COHORT_CHECK=1
3 test_train.py
4 test_torch_cxx.py
2 test_torch_cxx.py COHORT_CHECK=1
2 test_torch.py COHORT_TORCH_EXTENSION=none
singleton test_misuse.py
3 test_misuse.py
RUNS
echo "python tests: $pass passed, $skip skipped, $fail failed"
[ "$fail" = 0 ]
