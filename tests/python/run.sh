#!/bin/sh
# The Python tests: each line below is one run of a test under mpirun (N), under torchrun
# (torchrun:N, the torchrun beside $PYTHON, on a free port, PMIx's variables removed: the
# backend bootstraps through torch's store) or alone, with /usr/bin/python3 unless PYTHON says
# otherwise (scripts/test.sh: the virtual environment of scripts/python-env.sh), under a
# timeout. A test whose module (numpy, torch, megatron) or torch backend is missing prints a
# SKIP line and counts as skipped, not failed; with PY_REQUIRE_ALL=1 (scripts/test.sh, which
# installs them) a SKIP line or exit 77 is a failure: no torch coverage is no pass.
# run_torch_suite.py is torch's own backend suite, which starts its ranks itself: its quick
# slice on cohort at 2 ranks, or with TEST_FULL=1 (scripts/test.sh --full) every test on cohort
# and gloo at 2 and 4 ranks, bounded by 6 times the limit below (8 to 25 min here, by the load).
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
torchrun=$(dirname "$py")/torchrun
free_port() {
    "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# test_megatron: quick mode runs it under mpirun at 4 ranks (PMIx bootstrap; dp=1) and under
# torchrun at 8 (torch's store, as Megatron users launch; dp=2, so every group kind has two
# members or more); the other two pairings (mpirun 8, torchrun 4) check the same layout
# arithmetic under a bootstrap already covered, and run in --full (they took 39 s and 16 s of
# the phase here), as do 16 ranks under each (dp=4; 62 s and 200 s here).
while read -r np prog envs; do
    [ -n "$np" ] || continue
    # "full N prog ...": a run that checks nothing the quick lines do not, in another shape;
    # only with TEST_FULL=1 (scripts/test.sh --full)
    if [ "$np" = full ]; then
        [ "${TEST_FULL:-0}" = 1 ] || { echo "== python: $prog $envs: --full only"; continue; }
        # shellcheck disable=SC2086
        set -- $prog $envs
        np=$1 prog=$2
        shift 2
        envs="$*"
    fi
    echo "== python: $prog: $np $envs"
    t0=$(date +%s)
    bound=$limit
    [ "$prog" = run_torch_suite.py ] && [ "${TEST_FULL:-0}" = 1 ] && bound=$((limit * 6))
    if [ "$np" = singleton ]; then
        # shellcheck disable=SC2086
        env -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u PMIX_SERVER_URI4 $envs \
            timeout -k 5 "$bound" "$py" "$prog" </dev/null >"$out" 2>&1
    elif [ "${np#torchrun:}" != "$np" ]; then
        if [ -x "$torchrun" ]; then
            # shellcheck disable=SC2086
            env -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u PMIX_SERVER_URI4 -u PMIX_RANK $envs \
                timeout -k 5 "$limit" "$torchrun" --nproc-per-node "${np#torchrun:}" \
                --master-addr 127.0.0.1 --master-port "$(free_port)" "$prog" </dev/null \
                >"$out" 2>&1
        else
            echo "SKIP: $prog: no torchrun beside $py" >"$out"
        fi
    else
        # shellcheck disable=SC2086
        timeout -k 5 "$limit" env $envs "$mpirun" $root --oversubscribe --bind-to none \
            -x COHORT_PLUGIN_PATH -np "$np" "$py" "$prog" </dev/null >"$out" 2>&1
    fi
    rc=$?
    cat "$out"
    # torchrun exits 1 for a child's 77: its SKIP line says what it was
    [ "$rc" != 0 ] && grep -q '^SKIP:' "$out" && rc=77
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
        echo "== python: $prog: $np $envs FAILED (rc $rc; 124 or 137: timed out after $bound s)"
        fail=$((fail + 1))
        ;;
    esac
done <<'RUNS'
singleton test_core.py
3 test_core.py
4 test_core.py COHORT_CHECK=1 COHORT_PROGRESS=block
singleton test_exit.py
4 test_torch.py
3 test_train.py
4 test_torch_gloo.py EXPECT_BOOTSTRAP=pmix
torchrun:4 test_torch_gloo.py EXPECT_BOOTSTRAP=store
torchrun:2 test_torch_gloo.py EXPECT_BOOTSTRAP=store COHORT_CHECK=1
4 test_torch_cxx.py
torchrun:4 test_torch_cxx.py
2 test_torch_cxx.py COHORT_CHECK=1
4 test_megatron.py
full 8 test_megatron.py
full torchrun:4 test_megatron.py
torchrun:8 test_megatron.py
full 16 test_megatron.py
full torchrun:16 test_megatron.py
singleton test_misuse.py
3 test_misuse.py
singleton run_torch_suite.py
singleton run_torch_suite.py SUITE_SELECT=mpi
RUNS
echo "python tests: $pass passed, $skip skipped, $fail failed"
[ "$fail" = 0 ]
