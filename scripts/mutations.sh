#!/bin/bash
# Re-runs the mutation list (tests/MUTATIONS.md's rows, one patch each in tests/mutations/):
# for each patch, apply it to this built tree, rebuild, run its test exactly as scripts/test.sh
# runs it in quick mode, and say whether the test caught it; then undo the patch. A table at
# the end. Usage (from a tree built by scripts/setup.sh or make build-tests):
#   scripts/mutations.sh                 every patch in tests/mutations/
#   scripts/mutations.sh NAME...         those named (file name with or without .patch)
#   scripts/mutations.sh --list          the patches, their test and expected line
#   scripts/mutations.sh --baseline ...  each of their tests once on the tree as it is: each
#                                        must pass, or its mutations' verdicts mean nothing
# A patch's header (lines before its diff) says:
#   # test: tests/mpi/coll_reduce        run as test.sh runs it: make check TESTS=... in quick
#                                        mode (no TEST_FULL, TEST_TOGETHER, TEST_RUNS, ...);
#                                        a tests/launch script through scripts/launch-tests.sh
#                                        in its quick mode, LAUNCH_BUILT=1
#   # expect: a line of the failure      fixed text the test's output must hold when it fails
#   # timeout: 900                       seconds for the test (default MUTATION_TIMEOUT, 900)
#   # bound: 60                          for a mutation that hangs: the bound of each run
#                                        (TEST_TIMEOUT, LAUNCH_TIMEOUT; test.sh's is 120 s
#                                        times the load per core, up to 480 s), so that its
#                                        hang is found sooner; the run lines stay the same
# Verdicts: caught (the test failed with the expected line), failed otherwise (it failed
# without it: read the log), NOT CAUGHT (it passed), skipped (the test said SKIP: nothing was
# checked, e.g. no root for a tests/launch script), does not apply, local changes (a file the
# patch touches has uncommitted changes: nothing is applied over someone's work), build failed,
# timed out (the bound above; launch.sh's own bounds end a hung run before it).
# The tree is never left mutated: the applied patch is named in the git directory before it is
# applied and undone on any exit (trap; a run killed with SIGKILL is undone by the next run,
# which finds the name). At the end the tree is rebuilt, so its programs are the source's again
# (MUTATION_NO_REBUILD=1: not). Everything runs at nice 10, one mutation at a time; the logs
# stay in MUTATION_LOGDIR (default a new /tmp/cohort-mutations.XXXXXX).
set -u
cd "$(dirname "$0")/.." || exit 1
top=$PWD
dir=tests/mutations
gitdir=$(git rev-parse --absolute-git-dir) || exit 1
state=$gitdir/cohort-mutation-applied
die() {
    echo "mutations.sh: $*" >&2
    exit 2
}

# A patch's header field, e.g. field test FILE.
field() { sed -n "/^diff --git /q; s/^# $1: //p" "$2" | head -1; }

patches=()
list=0
baseline=0
for a in "$@"; do
    case $a in
    --list) list=1 ;;
    --baseline) baseline=1 ;;
    -*) die "unknown option $a (usage: scripts/mutations.sh [--list | --baseline] [NAME...])" ;;
    *)
        p=$dir/$(basename "${a%.patch}").patch
        [ -f "$p" ] || die "no patch $p"
        patches+=("$p")
        ;;
    esac
done
[ ${#patches[@]} -gt 0 ] || patches=("$dir"/*.patch)
[ -f "${patches[0]}" ] || die "no patches in $dir"
for p in "${patches[@]}"; do
    if [ -z "$(field test "$p")" ] || [ -z "$(field expect "$p")" ]; then
        die "$p: its header needs '# test:' and '# expect:' lines"
    fi
done
if [ $list = 1 ]; then
    for p in "${patches[@]}"; do
        printf '%-40s %-28s %s\n' "$(basename "$p" .patch)" "$(field test "$p")" "$(field expect "$p")"
    done
    exit 0
fi
[ -f Makefile ] || die "build the tree first (scripts/setup.sh, or configure and make build-tests)"

# One run at a time in a tree: two would apply patches over each other.
exec 9>"$gitdir/cohort-mutations.lock"
flock -n 9 || die "another scripts/mutations.sh runs in this tree"

# Undoes the applied patch, if any; the patch's files must then be as committed.
applied=
restore() {
    local p=${applied:-}
    [ -n "$p" ] || { [ -f "$state" ] && p=$(cat "$state"); }
    [ -n "$p" ] || return 0
    if git apply -R "$p" 2>/dev/null; then
        echo "mutations.sh: undid $(basename "$p")"
    elif ! git apply --check "$p" 2>/dev/null; then
        # Neither undone nor applicable again: the files are neither mutated nor as committed.
        echo "mutations.sh: could not undo $p: see git diff" >&2
        return 1
    fi # (else it was never applied: killed between naming it and applying it)
    rm -f "$state"
    applied=
}
# The build or test running now: its own session and process group (setsid), waited for in
# the background so that a signal to this script is handled at once, not when the test ends;
# stopped, with everything it started (make, mpirun, the ranks), before the patch is undone.
child=
stop_child() {
    [ -n "$child" ] || return 0
    kill -TERM -- "-$child" 2>/dev/null
    sleep 2
    kill -KILL -- "-$child" 2>/dev/null
    # timeout(1) leads a process group of its own inside that session: what it started.
    pkill -KILL -s "$child" 2>/dev/null
    child=
}
# COMMAND... at nice 10 in the background, waited for; its status.
run_child() {
    setsid -w nice -n 10 "$@" &
    child=$!
    wait "$child"
    local rc=$?
    child=
    return $rc
}
trap 'stop_child; restore; exit 130' INT TERM HUP
trap 'stop_child; restore' EXIT
if [ -f "$state" ]; then
    echo "mutations.sh: a run before left $(cat "$state") applied: undoing it"
    restore || exit 1
fi

logdir=${MUTATION_LOGDIR:-$(mktemp -d /tmp/cohort-mutations.XXXXXX)}
mkdir -p "$logdir"
table=$logdir/table
: >"$table"
start=$(date +%s)
if [ $baseline = 1 ]; then
    echo "mutations.sh: the tests of ${#patches[@]} mutations, unmutated; logs in $logdir"
else
    echo "mutations.sh: ${#patches[@]} mutations, logs in $logdir"
fi

# The test, as scripts/test.sh runs it in quick mode; its output and log into $1.
run_test() { # LOG TEST TIMEOUT [BOUND]
    local log=$1 t=$2 to=$3 bound=${4:-} rc=0
    case $t in
    tests/launch/*.sh)
        run_child env LAUNCH_BUILT=1 ${bound:+LAUNCH_TIMEOUT=$bound} timeout -k 30 "$to" \
            scripts/launch-tests.sh "$t" >"$log" 2>&1 ||
            rc=$?
        [ ! -f "$t.log" ] || cat "$t.log" >>"$log"
        ;;
    tests/*)
        run_child env -u TEST_FULL -u TEST_TOGETHER -u TEST_RUNS -u TEST_ONE_RUN -u TEST_ALL_RUNS \
            ${bound:+TEST_TIMEOUT=$bound} timeout -k 30 "$to" make check TESTS="$t" \
            >"$log" 2>&1 || rc=$?
        # automake's log: tests/mpi/p2p.log, tests/gpu/fake_check.log for fake_check.sh
        for l in "$t.log" "${t%.sh}.log"; do
            [ ! -f "$l" ] || { cat "$l" >>"$log"; break; }
        done
        ;;
    *)
        echo "mutations.sh: no way to run '$t' (a make check test or a tests/launch script)" >"$log"
        rc=2
        ;;
    esac
    # A test that skipped (no device, no root) passed without checking anything: 77.
    [ $rc != 0 ] || ! grep -q "^SKIP: $t" "$log" || rc=77
    return $rc
}

# --baseline: each test once, unmutated (the same command, bound and log as its mutations').
if [ $baseline = 1 ]; then
    bad=0
    for t in $(for p in "${patches[@]}"; do field test "$p"; done | sort -u); do
        log=$logdir/baseline-$(basename "$t").log
        t0=$(date +%s)
        rc=0
        run_test "$log" "$t" "${MUTATION_TIMEOUT:-900}" || rc=$?
        verdict=passes
        [ $rc = 0 ] || { verdict="FAILS UNMUTATED (rc $rc, log $log)"; bad=$((bad + 1)); }
        [ $rc != 77 ] || verdict="SKIPPED: checks nothing here (log $log)"
        printf '%-28s %5d s  %s\n' "$t" $(($(date +%s) - t0)) "$verdict" | tee -a "$table"
    done
    echo "== baseline: $bad test(s) failing unmutated, $(($(date +%s) - start)) s" \
        "(commit $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg))"
    [ $bad = 0 ]
    exit
fi

caught=0
for p in "${patches[@]}"; do
    name=$(basename "$p" .patch)
    t=$(field test "$p")
    expect=$(field expect "$p")
    to=$(field timeout "$p")
    to=${to:-${MUTATION_TIMEOUT:-900}}
    bound=$(field bound "$p")
    log=$logdir/$name.log
    t0=$(date +%s)
    files=$(git apply --numstat "$p" | cut -f3)
    line=
    echo "== $name: $t"
    # shellcheck disable=SC2086 # file names from git, no spaces in this tree
    if ! git diff --quiet HEAD -- $files; then
        verdict="local changes"
        line="uncommitted changes in $(echo "$files" | tr '\n' ' ')"
    elif ! git apply --check "$p" 2>"$log"; then
        verdict="does not apply"
        line=$(head -1 "$log")
    else
        echo "$top/$p" >"$state"
        applied=$top/$p
        git apply "$p" || die "$p: git apply failed after its check"
        if ! run_child make -j2 build-tests >"$log.build" 2>&1; then
            verdict="build failed"
            line=$(grep -m1 'error' "$log.build")
        else
            rc=0
            run_test "$log" "$t" "$to" "$bound" || rc=$?
            if [ $rc = 0 ]; then
                verdict="NOT CAUGHT"
            elif [ $rc = 77 ]; then
                verdict=skipped
                line=$(grep -m1 "^SKIP: $t" "$log")
            elif [ $rc = 124 ] || [ $rc = 137 ]; then
                verdict="timed out"
                line="no verdict in $to s"
            elif grep -qF -- "$expect" "$log"; then
                verdict=caught
                caught=$((caught + 1))
                line=$(grep -m1 -F -- "$expect" "$log")
                # Which run line failed (launch.sh stops at the first): the one that caught it.
                run=$(grep -m1 '^== [^ ]*: .* failed (rc' "$log" | sed 's/^== //; s/ failed (rc.*//; s/ TEST_CONFIGS=.*/ (together)/')
                [ -z "$run" ] || line="[$run] $line"
            else
                verdict="failed otherwise"
                line=$(grep -m1 'check failed\|FAIL\|failed' "$log")
            fi
        fi
        restore || exit 1
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$t" "$verdict" "$(($(date +%s) - t0))" \
        "$(echo "$line" | cut -c1-160)" >>"$table"
    echo "== $name: $verdict ($(($(date +%s) - t0)) s)"
done

if [ "${MUTATION_NO_REBUILD:-0}" != 1 ]; then
    echo "mutations.sh: rebuilding the restored tree"
    run_child make -j2 build-tests >"$logdir/rebuild.log" 2>&1 ||
        echo "mutations.sh: the rebuild failed, see $logdir/rebuild.log" >&2
fi
echo
echo "== mutations: $caught of ${#patches[@]} caught in $(($(date +%s) - start)) s" \
    "(commit $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-40s %-28s %-16s %5s  %s\n' mutation test verdict s "line"
while IFS="$(printf '\t')" read -r n t v s l; do
    printf '%-40s %-28s %-16s %5s  %s\n' "$n" "$t" "$v" "$s" "$l"
done <"$table"
[ "$caught" = ${#patches[@]} ]
