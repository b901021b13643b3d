# Shared by the tests/launch scripts (sourced, bash). They run the multi-rank test programs
# under launchers other than the plain single-host mpirun of `make check`, as root, and clean
# up exactly what they made: every process they start carries COHL_TAG=<its temporary
# directory> in its environment, which is how stragglers are found and killed by PID.

# The programs that matter beyond one host and one launcher: groups, lazy wiring, p2p, the
# collective suites, layouts. Their "run:" lines say how many ranks and which settings.
LAUNCH_PROGS=${LAUNCH_PROGS:-groups wiring p2p coll_move coll_reduce layout}
# Ranks per run at most (2 cores shared here): run lines above this are skipped, and said so.
LAUNCH_MAX_RANKS=${LAUNCH_MAX_RANKS:-8}
# Bound on each launcher run, in seconds, times the load per core (1-4) when the machine is
# busier than its cores, as tests/mpi/launch.sh does (a loaded machine is slow, not hung).
LAUNCH_TIMEOUT=${LAUNCH_TIMEOUT:-120}
launch_scale=$(awk -v c="$(nproc 2>/dev/null || echo 1)" \
    '{ s = int($1 / c + 0.999); print (s < 1 ? 1 : (s > 4 ? 4 : s)) }' /proc/loadavg 2>/dev/null)
LAUNCH_TIMEOUT=$((LAUNCH_TIMEOUT * ${launch_scale:-1}))

launch_log() { echo "== $(basename "$0"): $*"; }
launch_die() { echo "!! $(basename "$0"): $*" >&2; exit 1; }

# Root is needed for daemons, namespaces and packages; without it the script is skipped (77,
# automake's SKIP) rather than failed.
launch_need_root() {
    if [ "$(id -u)" != 0 ]; then
        echo "$(basename "$0"): needs root; skipped"
        exit 77
    fi
}

# apt-get install, waiting for a dpkg lock held by someone else instead of failing on it.
launch_apt_install() {
    local missing='' p
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    launch_log "installing$missing"
    timeout 900 apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null ||
        launch_die "apt-get update failed"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get -o DPkg::Lock::Timeout=600 install -y -q \
        --no-install-recommends $missing >/dev/null || launch_die "installing$missing failed"
}

# Builds the library, the plugins, the test programs and the tools in the tree (configured
# already by scripts/setup.sh).
launch_build() {
    local targets='' p
    [ -f Makefile ] || launch_die "not configured: run scripts/setup.sh first"
    for p in $LAUNCH_PROGS; do
        targets="$targets tests/mpi/$p"
    done
    # shellcheck disable=SC2086
    launch_make all $targets
}

# make TARGETS, unless the caller built them already (LAUNCH_BUILT=1: scripts/test.sh, whose
# Python phase configures and makes this tree again, for the torch extension, while the launch
# tests run: two makes in one tree would race on its files). Then each file target must exist.
launch_make() {
    local t
    if [ "${LAUNCH_BUILT:-0}" = 1 ]; then
        for t in "$@"; do
            [ "$t" = all ] || [ -x "$t" ] || launch_die "$t is not built (LAUNCH_BUILT=1)"
        done
        return 0
    fi
    make -s -j"$(nproc)" "$@" >/dev/null || launch_die "build failed"
}

# The run lines of a program's source, "NP ENV..." one a line, singletons left out; only the
# first of them for a program named in LAUNCH_ONE_RUN (scripts/launch-tests.sh's quick mode:
# the collective suites' algorithm matrices ran under mpirun in make check already).
launch_runs() {
    # Variants of the engine's own paths (single copy forced, faults) do not depend on the
    # launcher: make check runs them; mpirun-only options cannot go to srun or prterun. In
    # quick mode (LAUNCH_QUICK=1, scripts/launch-tests.sh) the progress modes too: how a wait
    # spins, yields or blocks is the engine's loop over its UCX worker, which no launcher
    # touches (p2p's COHORT_PROGRESS lines ran under mpirun in make check; under srun, prterun
    # and on 2 and 3 hosts they repeated that, each a launch of its own); --full keeps them.
    local n=1000000 engine='COHORT_CMA\|COHORT_FAULT\| --'
    case " ${LAUNCH_ONE_RUN:-} " in *" $1 "*) n=1 ;; esac
    [ "${LAUNCH_QUICK:-0}" != 1 ] || engine="$engine\\|COHORT_PROGRESS"
    sed -n 's|.*/\* run: \(.*\) \*/.*|\1|p' "tests/mpi/$1.c" | grep -v '^singleton' |
        grep -v "$engine" | head -n "$n"
}

# The script's directory T, tagged: everything it starts carries COHL_TAG=T. At exit, whatever
# happened: the script's launch_stop_own (if it defines one; it gets the exit status) stops what
# it started by PID, tagged leftovers are killed, then its launch_after_kill (likewise) runs,
# and T is removed (kept with COHL_KEEP=1).
launch_begin() { # NAME
    T=$(mktemp -d "/tmp/cohl-$1.XXXXXX")
    chmod 755 "$T"
    export COHL_TAG=$T
    trap launch_end EXIT
    trap 'exit 130' INT TERM
}

launch_end() {
    local rc=$?
    trap - EXIT INT TERM
    if declare -F launch_stop_own >/dev/null; then
        launch_stop_own "$rc"
    fi
    launch_kill_tagged "$T"
    if declare -F launch_after_kill >/dev/null; then
        launch_after_kill "$rc"
    fi
    if [ "${COHL_KEEP:-0}" = 1 ]; then
        echo "kept $T"
    else
        rm -rf "$T"
    fi
    exit "$rc"
}

# Every run line of every program in LAUNCH_PROGS through "RUNNER NP ENVS PROGRAM" (a function
# of the calling script, one bounded launch), counted into its passed/failed/skipped; WHAT says
# how it ran, for the log. Runs with fewer than LAUNCH_MIN_RANKS (1) or more than
# LAUNCH_MAX_RANKS ranks are skipped.
launch_programs() {
    local runner=$1 what=$2 prog np envs t0 min=${LAUNCH_MIN_RANKS:-1}
    for prog in $LAUNCH_PROGS; do
        while read -r np envs; do
            [ -n "$np" ] || continue
            if [ "$np" -gt "$LAUNCH_MAX_RANKS" ] || [ "$np" -lt "$min" ]; then
                launch_log "$prog: $what -n $np $envs: skipped ($min to $LAUNCH_MAX_RANKS ranks only)"
                skipped=$((skipped + 1))
                continue
            fi
            launch_run_one "$runner" "$what" "$np" "$envs" "$PWD/tests/mpi/$prog" "$prog"
        done < <(launch_runs "$prog")
    done
}

# One run of PROG by RUNNER (called as RUNNER NP "ENVS" PROG, its output in $T/run.log),
# logged under NAME and counted in passed or failed.
# A launch that timed out after its program said "NAME: passed" (rank 0 through finalize; seen
# once in CI, every rank gone and an orted on one of three namespace hosts outliving its job by
# the whole bound) runs once more, saying so on a "RETRY:" line that test.sh's summary counts;
# a second failure fails (a rank of ours still hung would hang the retry too). A launch that
# timed out before that is a hang of ours: no retry.
launch_run_one() { # RUNNER WHAT NP "ENVS" PROG NAME
    local runner=$1 what=$2 np=$3 envs=$4 prog=$5 name=$6 t0 rc try
    for try in 1 2; do
        t0=$(date +%s.%N)
        rc=0
        "$runner" "$np" "$envs" "$prog" >"$T/run.log" 2>&1 || rc=$?
        if [ "$rc" = 0 ]; then
            launch_log "$name: $what -n $np $envs: ok ($(launch_since "$t0") s)"
            passed=$((passed + 1))
            return 0
        fi
        if [ "$try" = 1 ] && { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } &&
            grep -q "^$name: passed" "$T/run.log"; then
            echo "RETRY: $name: $what -n $np $envs: the program passed, but its launcher did not end within its bound (rc $rc): once more"
            continue
        fi
        break
    done
    echo "!! $name: $what -n $np $envs failed (rc $rc; 124: timed out)"
    tail -30 "$T/run.log"
    failed=$((failed + 1))
}

# PIDs of the processes whose environment holds COHL_TAG=$1 (our own shell left out).
launch_tagged_pids() {
    local f pid
    for f in /proc/[0-9]*/environ; do
        pid=${f#/proc/}
        pid=${pid%/environ}
        [ "$pid" = $$ ] && continue
        [ "$pid" = "${BASHPID:-$$}" ] && continue
        # grep itself runs untagged, so it never lists itself.
        if env -u COHL_TAG grep -qzxF "COHL_TAG=$1" "$f" 2>/dev/null; then
            echo "$pid"
        fi
    done
}

# Kills every process tagged $1 (TERM, then KILL what is left after a bounded wait).
launch_kill_tagged() {
    local pids
    pids=$(launch_tagged_pids "$1")
    [ -z "$pids" ] && return 0
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        pids=$(launch_tagged_pids "$1")
        [ -z "$pids" ] && return 0
        sleep 0.5
    done
    launch_log "killing stragglers: $pids"
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null
    return 0
}

# Stops one daemon by PID: TERM, a bounded wait, then KILL.
launch_stop_pid() {
    local pid=$1
    [ -n "$pid" ] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 20); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.5
    done
    kill -KILL "$pid" 2>/dev/null
    return 0
}

# Polls "$@" until it succeeds, at most $LAUNCH_WAIT_S seconds (default 60). Returns its status.
launch_wait_for() {
    local deadline=$(($(date +%s) + ${LAUNCH_WAIT_S:-60}))
    while ! "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -ge "$deadline" ] && return 1
        sleep 0.2
    done
    return 0
}

# Seconds since $1 (a `date +%s.%N`), to 0.01 s.
launch_since() {
    awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
}

# Runs "$@" in the background and waits for it: a signal to the script then runs its trap at
# once instead of after the command (bash defers traps while a foreground child runs). The
# command's processes carry the tag, so the trap's cleanup finds them.
launch_fg() {
    "$@" &
    wait $!
}
