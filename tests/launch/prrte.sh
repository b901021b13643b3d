#!/bin/bash
# cohort under PRRTE's prterun. Debian 12 has no PRRTE package, but Debian 13's openmpi 5.0.7
# source package bundles OpenPMIx 5.0.5 and PRRTE 3.0.8: fetched once with apt-get source
# through a private apt configuration (a trixie deb-src line; the system's apt lists and
# caches are not touched), built into a cache directory (OpenPMIx first, then PRRTE on it)
# and reused when present. Then runs the test programs' run lines and cohort_peers --json
# (checked by check_peers.py) under prterun, with cohort's plugins as built (Debian's PMIx
# 4.2.2 client against the 5.0.5 server: the dmodex plugin works there).
# The first run fetches and builds (~200 s here), later ones reuse the cache; no archive
# reachable skips the script (77). Not done yet: cohort built against OpenPMIx 5.0.5 and the
# group plugin over PMIx_Group_construct (under prterun today it reports "this PMIx server
# cannot construct groups (PMIX_ERR_BAD_PARAM)" with Debian's 4.2.2 client; issue 12, item 4).
#
#   bash tests/launch/prrte.sh              # from a tree built by scripts/setup.sh, as root
# Settings: COHL_PRRTE_CACHE (/var/cache/cohl-prrte), LAUNCH_PROGS, LAUNCH_MAX_RANKS (8),
# LAUNCH_TIMEOUT (120 s per prterun), COHL_KEEP=1.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/launch/common.sh
launch_need_root
launch_apt_install gcc make libevent-dev libhwloc-dev python3 xz-utils
launch_build
top=$PWD
cache=${COHL_PRRTE_CACHE:-/var/cache/cohl-prrte}
inst=$cache/install

prrte_build() {
    local apt_opts src
    mkdir -p "$cache/apt/lists/partial" "$cache/src" || return 1
    echo "deb-src http://deb.debian.org/debian trixie main" >"$cache/apt/sources.list"
    apt_opts=(-q -o Dir::Etc::SourceList="$cache/apt/sources.list" -o Dir::Etc::SourceParts=-
        -o Dir::State::Lists="$cache/apt/lists" -o Dir::Cache::pkgcache=
        -o Dir::Cache::srcpkgcache= -o DPkg::Lock::Timeout=600)
    if ! ls "$cache"/src/openmpi_5.0.7.orig.tar.* >/dev/null 2>&1; then
        launch_log "fetching Debian 13's openmpi 5.0.7 source package"
        # No archive reachable is a skip (77), said so; a build that fails is a failure.
        if ! timeout 600 apt-get "${apt_opts[@]}" update >/dev/null ||
            ! (cd "$cache/src" && timeout 600 apt-get "${apt_opts[@]}" source --download-only \
                openmpi=5.0.7-1 >/dev/null 2>&1); then
            echo "prrte.sh: cannot fetch openmpi 5.0.7's source from Debian's archive; skipped"
            exit 77
        fi
    fi
    src=$cache/src/openmpi-5.0.7
    [ -d "$src/3rd-party/prrte" ] ||
        tar -C "$cache/src" -xf "$cache"/src/openmpi_5.0.7.orig.tar.* \
            openmpi-5.0.7/3rd-party/openpmix openmpi-5.0.7/3rd-party/prrte || return 1
    launch_log "building OpenPMIx 5.0.5 into $inst"
    (cd "$src/3rd-party/openpmix" && ./configure -q --prefix="$inst" --disable-man-pages \
        >"$cache/pmix.configure.log" 2>&1 && make -s -j"$(nproc)" install >"$cache/pmix.make.log" 2>&1) ||
        return 1
    launch_log "building PRRTE 3.0.8 into $inst"
    (cd "$src/3rd-party/prrte" && ./configure -q --prefix="$inst" --with-pmix="$inst" \
        --disable-man-pages >"$cache/prrte.configure.log" 2>&1 &&
        make -s -j"$(nproc)" install >"$cache/prrte.make.log" 2>&1) || return 1
}
if [ ! -x "$inst/bin/prterun" ]; then
    t0=$(date +%s.%N)
    prrte_build || launch_die "building OpenPMIx/PRRTE failed (logs in $cache)"
    launch_log "OpenPMIx + PRRTE built in $(launch_since "$t0") s"
fi

launch_begin prrte
export COHORT_PLUGIN_PATH=$top/.libs TEST_SRCDIR=$top

prte_run() { # NP "ENV..." PROG ARGS...: one prterun, bounded
    local np=$1 envs=$2 e xs=()
    shift 2
    for e in $envs; do
        xs+=(-x "$e")
    done
    launch_fg timeout -k 10 "$LAUNCH_TIMEOUT" env LD_LIBRARY_PATH="$inst/lib" \
        "$inst/bin/prterun" --allow-run-as-root -n "$np" --map-by :oversubscribe \
        -x COHORT_PLUGIN_PATH -x TEST_SRCDIR "${xs[@]}" "$@" </dev/null
}

failed=0 passed=0 skipped=0
launch_programs prte_run prterun
for np in 4 8; do
    [ "$np" -gt "$LAUNCH_MAX_RANKS" ] && continue
    t0=$(date +%s.%N)
    if prte_run "$np" "" "$top/tools/cohort_peers" --layout tp=2,pp=2 --json >"$T/peers.json" \
        2>"$T/run.log" && python3 tests/launch/check_peers.py --world "$np" <"$T/peers.json"; then
        launch_log "cohort_peers -n $np: prterun wall $(launch_since "$t0") s"
        passed=$((passed + 1))
    else
        echo "!! cohort_peers prterun -n $np failed"
        head -c 1500 "$T/peers.json"
        tail -20 "$T/run.log"
        failed=$((failed + 1))
    fi
done
launch_log "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
