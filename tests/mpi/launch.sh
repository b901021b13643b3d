#!/bin/sh
# Runs one multi-rank test program. Its source's "run:" lines say how: each is one mpirun,
#   /* run: 4 */                          4 ranks
#   /* run: 2 COHORT_PMIX_PLUGIN=fence */  2 ranks with an environment setting
#   /* run: singleton */                  no launcher at all
#   /* run: 8 --enable-recovery X=1 */     words starting with -- go to mpirun
#   /* run: 8 --expect-passed=7 ... */     7 ranks must print "rank N: rank passed" (where
#                                          ranks may die, mpirun --enable-recovery exits 0
#                                          whatever its ranks returned)
#   /* run: 4 --retry-on-timeout ... */    a run that timed out runs once more, saying so
#                                          ("RETRY:"; a hang outside cohort, in the launcher's
#                                          PMIx server); a second timeout fails the test
#   /* run: 8 --full-only ... */           full mode only (TEST_FULL=1, scripts/test.sh --full):
#                                          a configuration whose paths the others cover
# every run under a timeout, so a hang fails the test instead of stalling CI. A program that
# exits 77 (what it needs is not here, e.g. no CUDA device) skips that run and the ones after
# it; the test is SKIP when no run passed and none failed.
#
# A source that says "/* runs: together */" (its main is test_configs(), harness.h) has its
# plain runs (no -- option, not singleton) of one rank count started as one mpirun that goes
# through their settings one after the other, each under its own cohort_init; each must print
# "NAME: passed". TEST_TOGETHER=0 starts one mpirun per line instead (scripts/test.sh --full).
# TEST_ONE_RUN=1 runs the first line only (the sanitizer pass: one run of the program), unless
# the program is in TEST_ALL_RUNS (Makefile.am's SANITIZE_ALL_RUNS).
#
# Bounds: TEST_TIMEOUT seconds per configuration (default 120), times the load per core when
# the machine is busier than its cores (a loaded machine is slow, not hung).
prog=$1
name=$(basename "$prog")
src="${TEST_SRCDIR:-.}/tests/mpi/$name.c"
limit=${TEST_TIMEOUT:-120}
cores=$(nproc 2>/dev/null || echo 1)
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
scale=$(awk -v l="$load" -v c="$cores" \
    'BEGIN { s = int(l / c + 0.999); print (s < 1 ? 1 : (s > 4 ? 4 : s)) }')
[ -n "$scale" ] || scale=1
limit=$((limit * scale))
# cpu_s: the CPU seconds (user + system) of this shell's finished children so far, from its
# times: with the wall time, what a run's "passed in" line says (an idle-bound run, waiting on
# timeouts or peers, uses little of it; a CPU-bound one about its ranks times its wall time).
# (times itself in this shell, not in a pipe or $(...): a subshell has no finished children.)
cpu_file=$(mktemp)
trap 'rm -f "$cpu_file"' EXIT
cpu() {
    times >"$cpu_file"
    cpu_s=$(awk 'NR == 2 {
        t = 0
        for (i = 1; i <= 2; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] }
        printf "%.1f", t }' "$cpu_file")
}
test_t0=$(date +%s)
# Not a multi-rank program (a Check suite, a script): run it as it is, bounded all the same;
# a script that runs several bounded mpiruns itself may say its whole bound in a line
# "# launch-timeout: SECONDS".
if [ ! -f "$src" ]; then
    whole=$(sed -n 's/^# launch-timeout: \([0-9][0-9]*\)$/\1/p' "$prog" 2>/dev/null | head -1)
    rc=0
    timeout -k 5 "$((${whole:-${TEST_TIMEOUT:-120}} * scale))" "$prog" || rc=$?
    cpu
    echo "== $name: took $(($(date +%s) - test_t0)) s, cpu $cpu_s s"
    exit $rc
fi
mpirun=${MPIRUN:-mpirun}
# TEST_RUNS (lines like the "run:" ones) replaces them: tests/gpu/fake_check.sh.
runs=${TEST_RUNS:-$(sed -n 's|.*/\* run: \(.*\) \*/.*|\1|p' "$src")}
[ -n "$runs" ] || { echo "$src has no 'run:' line"; exit 99; }
# Quick mode leaves out the --full-only lines, and says how many. TEST_FULL goes to every rank
# (harness.h's test_full(): the test's whole matrix).
export TEST_FULL=${TEST_FULL:-0}
if [ "$TEST_FULL" != 1 ]; then
    nfull=$(echo "$runs" | grep -c -- ' --full-only' || true)
    [ "$nfull" = 0 ] || echo "== $name: $nfull run lines in full mode only (TEST_FULL=1)"
    runs=$(echo "$runs" | grep -v -- ' --full-only' || true)
    [ -n "$runs" ] || { echo "$src: every 'run:' line is --full-only"; exit 99; }
fi
runs=$(echo "$runs" | sed 's/ --full-only//')
case " ${TEST_ALL_RUNS:-} " in
*" tests/mpi/$name "*) ;;
*) [ "${TEST_ONE_RUN:-0}" = 1 ] && runs=$(echo "$runs" | head -1) ;;
esac
together=0
[ "${TEST_TOGETHER:-1}" != 0 ] && grep -q '/\* runs: together \*/' "$src" && together=1
# A plain line: a rank count, settings only.
plain() { case " $2" in *" --"*) return 1 ;; esac; [ "$1" != singleton ]; }
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
# Every rank this script starts carries its id (TEST_LAUNCH_ID, given to the ranks with -x), so
# that a run's leftover ranks are killed by that and not by name: make check runs two tests at
# a time, and two of them run the same program (tests/gpu's scripts, cuda_coll), whose other
# ranks a failed run must leave alone.
TEST_LAUNCH_ID="$$.$(date +%s%N)"
export TEST_LAUNCH_ID
# The program's name is matched however mpirun was given its path: make check gives it relative
# (./tests/mpi/timeout), the ranks' command lines say so, and since the programs are no longer
# libtool wrappers (which ran .libs/lt-NAME by its full path) a full-path match missed every
# rank: a hung run's ranks lived on after its timeout, seen 2026-12-06 (a timeout mutation's two
# ranks spinning 9 min later). Only ranks with this run's id are killed, whatever matched.
kill_ours() { # program
    for p in $(pgrep -f "(^|/)(\.libs/)?(lt-)?$(basename "$1")\$" 2>/dev/null); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "TEST_LAUNCH_ID=$TEST_LAUNCH_ID" &&
            kill -KILL "$p" 2>/dev/null
    done
}
status=0
echo "$runs" | {
    skipped=0
    passed=0
    done_np=" "
    while read -r np envs; do
        configs=
        nconf=1
        if [ "$together" = 1 ] && plain "$np" "$envs"; then
            case $done_np in *" $np "*) continue ;; esac
            done_np="$done_np$np "
            # Every plain line of this rank count, in their order, ';' between them.
            configs=$(echo "$runs" | while read -r n2 e2; do
                [ "$n2" = "$np" ] && plain "$n2" "$e2" && printf '%s;' "$e2"
            done)
            configs=${configs%;}
            # One line of input even for one empty configuration (the defaults): 1, not nothing.
            nconf=$(printf '%s\n' "$configs" | awk -F';' '{ print NF ? NF : 1 }')
            envs="TEST_CONFIGS=$configs"
            echo "== $name: $np, $nconf configurations in one mpirun: $configs"
        else
            echo "== $name: $np $envs"
        fi
        bound=$((limit * nconf))
        t0=$(date +%s)
        cpu
        c0=$cpu_s
        rc=0
        if [ "$np" = singleton ]; then
            # A launcher's variables leaking in would make this a client, not a singleton.
            # shellcheck disable=SC2086
            env -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u PMIX_SERVER_URI4 $envs \
                timeout -k 5 "$bound" "$prog" || rc=$?
        else
            opts=
            vars=
            expect=
            retry=0
            [ -n "$configs" ] && vars=
            [ -n "$configs" ] || for w in $envs; do
                case $w in
                --expect-passed=*) expect=${w#--expect-passed=} ;;
                --retry-on-timeout) retry=1 ;;
                --*) opts="$opts $w" ;;
                *) vars="$vars $w" ;;
                esac
            done
            out=$(mktemp)
            while :; do
                rc=0
                # shellcheck disable=SC2086
                TEST_CONFIGS=$configs timeout -k 5 "$bound" env $vars "$mpirun" $root \
                    --oversubscribe --bind-to none $opts -x COHORT_PLUGIN_PATH -x TEST_SRCDIR \
                    -x TEST_CONFIGS -x TEST_FULL -x TEST_LAUNCH_ID -np "$np" "$prog" </dev/null \
                    >"$out" 2>&1 || rc=$?
                cat "$out"
                { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && [ "$retry" = 1 ] || break
                retry=0
                # Said on a line of its own: scripts/test.sh counts the retries in its summary.
                echo "RETRY: $name: $np $envs timed out after $bound s: once more (--retry-on-timeout)"
                kill_ours "$prog"
            done
            if [ "$rc" = 0 ] && [ -n "$configs" ]; then
                got=$(grep -c "^$name: passed" "$out")
                [ "$got" = "$nconf" ] || {
                    echo "== $name: $np: $got configurations passed, expected $nconf"
                    rc=1
                }
            fi
            if [ "$rc" = 0 ] && [ -n "$expect" ]; then
                got=$(grep -c ': rank passed$' "$out")
                [ "$got" = "$expect" ] || {
                    echo "== $name: $np $envs: $got ranks passed, expected $expect"
                    rc=1
                }
            fi
            rm -f "$out"
        fi
        case $rc in
        0)
            # Said, never asserted: where a test's time goes, run by run.
            cpu
            echo "== $name: $np: passed in $(($(date +%s) - t0)) s, cpu $(awk -v a="$c0" -v b="$cpu_s" 'BEGIN { printf "%.1f", b - a }') s"
            passed=1
            ;;
        77)
            echo "== $name: $np $envs skipped, and the runs after it"
            skipped=1
            break
            ;;
        *)
            echo "== $name: $np $envs failed (rc $rc; 124 or 137: timed out after $bound s)"
            # mpirun may die before its ranks: leave no rank behind to load the machine. Only
            # this run's ranks: another test's or checkout's run of the same program is not
            # ours to kill.
            kill_ours "$prog"
            exit 1
            ;;
        esac
    done
    # The loop runs in a subshell (a pipe): it says how it ended through its status.
    [ "$skipped" = 1 ] && [ "$passed" = 0 ] && exit 77
    exit 0
} || status=$?
cpu
echo "== $name: took $(($(date +%s) - test_t0)) s, cpu $cpu_s s"
exit $status
