#!/bin/sh
# libFuzzer targets (tests/fuzz/) for what parses outside input: the active-message header
# decoder, the layout-spec parser, the COHORT_* settings parser. Each is built with clang
# (-fsanitize=fuzzer,address,undefined) straight from the sources it needs, seeded, given the
# stored corpus (tests/fuzz/corpus/TARGET: inputs earlier runs found, each reaching coverage
# the others do not; replayed first, so a short run starts where long ones got to) and run
# for FUZZ_SECONDS (default 20) seconds; the executions and the coverage reached are printed.
# A crash, a leak or a sanitizer report fails the script, leaving the input that did it.
# FUZZ_MERGE=1 adds what this run found to the stored corpus (libFuzzer -merge=1: only inputs
# with new coverage), to commit after a long run.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${FUZZ_SECONDS:-20}
cc=${CLANG:-clang}
command -v "$cc" >/dev/null || { echo "fuzz: $cc not found (apt-get install clang)"; exit 1; }
work=$(mktemp -d /tmp/cohort-fuzz.XXXXXX)
trap '[ -n "${FUZZ_KEEP:-}" ] || rm -rf "$work"' EXIT
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
       -I$top/include -I$top/src -I$top"
status=0

seed() { # target, then one seed per argument
    t=$1
    shift
    mkdir -p "$work/$t"
    i=0
    for s in "$@"; do
        printf '%b' "$s" >"$work/$t/seed$i"
        i=$((i + 1))
    done
}

seed header '\300\002\000\000\001\000\000\000\010\007\006\005\004\003\002\001\003\000\000\000\002\000\000\000\357\276\255\336\003\000\000\000'
seed config 'TIMEOUT=2.5\nKEEPALIVE_S=1\nWATCH_S=0' 'PMIX_PLUGIN=fence\nPROGRESS=block' \
    'FAULT=send:3@1\nORPHAN_LIMIT=1024' 'ALGO_ALLREDUCE=0-64k:recursive_doubling,64k-inf:ring'
seed layout '\020\000tp=2,pp=2' '\000\001tp=8,pp=4,cp=2,order=tp-cp-ep-dp-pp' \
    '\100\000tp=2,pp=2,ep=2,etp=1,hcp=2:2,dopt=2,embd=first-last' \
    '\337\001tp=4,pp=4,cp=2,order=tp-cp-dp-pp'

build() { # target, sources...
    t=$1
    shift
    # shellcheck disable=SC2086
    $cc $flags -o "$work/fuzz_$t" "$top/tests/fuzz/fuzz_$t.c" "$@" 2>"$work/$t.build" || {
        cat "$work/$t.build"
        echo "fuzz $t: build failed"
        status=1
        return 1
    }
}

run() {
    t=$1
    stored="$top/tests/fuzz/corpus/$t"
    mkdir -p "$stored"
    (cd "$work" && "./fuzz_$t" -max_total_time="$secs" -print_final_stats=1 \
        -artifact_prefix="$work/$t-" "$work/$t" "$stored" >"$work/$t.log" 2>&1)
    rc=$?
    if [ $rc = 0 ] && [ "${FUZZ_MERGE:-0}" = 1 ]; then
        (cd "$work" && "./fuzz_$t" -merge=1 "$stored" "$work/$t" >"$work/$t.merge" 2>&1) || {
            tail -20 "$work/$t.merge"
            rc=1
        }
        echo "fuzz $t: stored corpus now $(find "$stored" -type f | wc -l) inputs"
    fi
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$work/$t.log" | tail -1)
    if [ $rc != 0 ]; then
        tail -40 "$work/$t.log"
        for a in "$work/$t"-*; do
            [ -f "$a" ] && cp "$a" "$top/" && echo "fuzz $t: input kept at $top/$(basename "$a")"
        done
        echo "fuzz $t: FAILED (rc $rc)"
        status=1
    else
        echo "fuzz $t: ${done_line:-no summary} in ${secs} s (from $(find "$stored" -type f | wc -l) stored inputs)"
    fi
}

build header "$top/src/core/am_header.c" && run header
build config "$top/src/core/config.c" && run config
build layout "$top/src/group/layout_spec.c" "$top/src/group/layout_gen.c" \
    "$top/src/group/layout_kind.c" && run layout
exit $status
