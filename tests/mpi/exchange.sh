#!/bin/sh
# cohort_init_exchange without any launcher: tests/mpi/exchange started N times with plain `&`,
# each told its rank, the world size and a directory that is their key-value store (exchange.c
# says what each mode checks). No mpirun, no PMIx: the launcher's variables are taken out of the
# environment. Every rank runs under `timeout`; leftovers are killed by the PIDs started here.
# launch-timeout: 420
set -u
prog=${EXCHANGE_PROG:-tests/mpi/exchange}
bound=${TEST_TIMEOUT:-120}
pids=
dir=
cleanup() {
    for p in $pids; do kill -KILL "$p" 2>/dev/null; done
    [ -n "$dir" ] && rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# run MODE STARTED SIZE: start ranks 0..STARTED-1 of a world of SIZE over a fresh store, wait
# for them all; each must exit 0 and say it passed.
run() {
    mode=$1 started=$2 size=$3
    dir=$(mktemp -d "${TMPDIR:-/tmp}/cohort-exchange.XXXXXX")
    out=$dir.out
    pids=
    echo "== exchange: $mode, $started of $size ranks"
    t0=$(date +%s)
    r=0
    while [ "$r" -lt "$started" ]; do
        env -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u PMIX_SERVER_URI4 -u PMIX_SERVER_URI3 \
            -u PMIX_SERVER_URI21 -u PMIX_SERVER_URI2 -u PMIX_RANK -u OMPI_COMM_WORLD_SIZE \
            timeout -k 5 "$bound" "$prog" "$mode" "$r" "$size" "$dir" >"$out.$r" 2>&1 &
        pids="$pids $!"
        r=$((r + 1))
    done
    failed=0
    r=0
    for p in $pids; do
        rc=0
        wait "$p" || rc=$?
        cat "$out.$r"
        if [ "$rc" != 0 ] || ! grep -q "^exchange $mode: rank $r passed" "$out.$r"; then
            echo "== exchange: $mode: rank $r failed (rc $rc; 124 or 137: timed out after $bound s)"
            failed=1
        fi
        rm -f "$out.$r"
        r=$((r + 1))
    done
    pids=
    rm -rf "$dir"
    dir=
    [ "$failed" = 0 ] || exit 1
    echo "== exchange: $mode, $started of $size ranks: passed in $(($(date +%s) - t0)) s"
}

# coexist: 3 ranks under mpirun, a PMIx context and one over the store in each process.
coexist() {
    mpirun=${MPIRUN:-mpirun}
    command -v "$mpirun" >/dev/null 2>&1 || {
        echo "== exchange: coexist not run: no $mpirun here"
        return
    }
    root=
    [ "$(id -u)" = 0 ] && root=--allow-run-as-root
    dir=$(mktemp -d "${TMPDIR:-/tmp}/cohort-exchange.XXXXXX")
    echo "== exchange: coexist, 3 ranks under $mpirun"
    t0=$(date +%s)
    rc=0
    timeout -k 5 "$bound" "$mpirun" $root --oversubscribe --bind-to none -x COHORT_PLUGIN_PATH \
        -np 3 "$prog" coexist -1 -1 "$dir" </dev/null >"$dir.out" 2>&1 || rc=$?
    cat "$dir.out"
    got=$(grep -c '^exchange coexist: rank [0-2] passed' "$dir.out")
    rm -rf "$dir" "$dir.out"
    dir=
    if [ "$rc" != 0 ] || [ "$got" != 3 ]; then
        echo "== exchange: coexist failed (rc $rc, $got of 3 ranks passed)"
        exit 1
    fi
    echo "== exchange: coexist: passed in $(($(date +%s) - t0)) s"
}

run bad 1 1
run main 4 4
run main 3 3
run pid 2 2
run late 3 3
run missing 3 4
coexist
