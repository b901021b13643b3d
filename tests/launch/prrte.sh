#!/bin/bash
# cohort under PRRTE's prterun. Debian 12 has no PRRTE package, but Debian 13's openmpi 5.0.7
# source package bundles OpenPMIx 5.0.5 and PRRTE 3.0.8: fetched once with apt-get source
# through a private apt configuration (a trixie deb-src line; the system's apt lists and
# caches are not touched), built into a cache directory (OpenPMIx first, then PRRTE on it)
# and reused when present. Then:
#  - the test programs' run lines and cohort_peers --json (checked by check_peers.py) under
#    prterun with cohort's plugins as built (on Debian's PMIx 4.2.2: a 4.2.2 client of the
#    5.0.5 server, where dmodex, fence and global work);
#  - cohort's plugins built a second time, against the cached OpenPMIx 5.0.5
#    (configure --with-pmix=DIR, plugins only, in the temporary directory), and the group
#    plugin for real with them: tests/mpi/group_plugin (several overlapping groups, one freed
#    and made again; TEST_GROUP_PLUGIN=works) at 4 and 8 ranks with its debug log checked by
#    check_group_ids.py (context ids agreed by members, distinct between groups, every
#    construct destructed), tests/mpi/plugins and cohort_peers with COHORT_PMIX_PLUGIN=group;
#  - the 4.2.2 client with the group plugin must be refused at init, loudly, naming both
#    versions (TEST_GROUP_PLUGIN=refused); and with the version check blinded (PMIX_VERSION
#    faked) the plugin's probe must still refuse it, on the context ids the server returned.
# The first run fetches and builds (470 s with -O3 on a quiet 2-core machine, the
# CI record; see prrte_build for what is left out now), later ones reuse the cache; no archive
# reachable skips the script (77). Ranks get no LD_LIBRARY_PATH: prterun finds its libpmix by
# RUNPATH, and each plugin loads the libpmix it was built for (both are libpmix.so.2).
# COHL_MEASURE=1 also times dmodex, fence, group and global side by side (5.0.5 plugins, 8
# ranks, COHL_MEASURE_REPEAT runs each, default 3): cohort_peers wall time and cohort_bench
# setup --no-mpi (printed, never asserted).
#
#   bash tests/launch/prrte.sh              # from a tree built by scripts/setup.sh, as root
#   bash tests/launch/prrte.sh --build-only # only the cache (scripts/test.sh starts this in
#                                           # the background at its start)
# Settings: COHL_PRRTE_CACHE (/var/cache/cohl-prrte), LAUNCH_PROGS, LAUNCH_MAX_RANKS (8),
# LAUNCH_TIMEOUT (120 s per prterun), COHL_MEASURE=1, COHL_MEASURE_REPEAT (3), COHL_KEEP=1.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/launch/common.sh
launch_need_root
launch_apt_install gcc make libevent-dev libhwloc-dev python3 xz-utils
build_only=0
[ "${1:-}" = --build-only ] && build_only=1
[ $build_only = 1 ] || launch_build
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
    # Only what prterun needs, built for the build's speed (a fresh machine builds it on every
    # CI run): no optimisation (-O0: what is tested here is cohort under the launcher, not the
    # launcher's speed), no PMIx tools, no dependency tracking (a one-off build), no batch
    # systems' components (prterun runs on this host alone), no man pages; configure under
    # dash (what configure spends its time in is the shell). PRRTE's configure then warns that
    # it found no pmixcc (a PMIx tool): that only leaves out PRRTE's pcc wrapper.
    local sh=/bin/sh cfg=(-q --prefix="$inst" --disable-dependency-tracking --disable-man-pages)
    [ -x /bin/dash ] && sh=/bin/dash
    launch_log "building OpenPMIx 5.0.5 into $inst"
    (cd "$src/3rd-party/openpmix" && CONFIG_SHELL=$sh CFLAGS="-O0 -pipe" $sh ./configure "${cfg[@]}" \
        --disable-pmix-binaries >"$cache/pmix.configure.log" 2>&1 &&
        make -s -j"$(nproc)" install >"$cache/pmix.make.log" 2>&1) || return 1
    launch_log "building PRRTE 3.0.8 into $inst"
    (cd "$src/3rd-party/prrte" && CONFIG_SHELL=$sh CFLAGS="-O0 -pipe" $sh ./configure "${cfg[@]}" \
        --with-pmix="$inst" --enable-mca-no-build=ras-slurm,ras-pbs,ras-lsf,ras-gridengine,ras-alps,ras-simulator,plm-slurm,plm-lsf,plm-tm,plm-alps,ess-slurm,ess-lsf,ess-tm,ess-alps \
        >"$cache/prrte.configure.log" 2>&1 &&
        make -s -j"$(nproc)" install >"$cache/prrte.make.log" 2>&1) || return 1
}
# One build at a time into the cache: another copy of the suite running now waits for it
# (flock on $cache.lock), then finds prterun there.
mkdir -p "$(dirname "$cache")" || launch_die "cannot make $(dirname "$cache")"
exec 9>"$cache.lock"
flock 9 || launch_die "cannot lock $cache.lock"
if [ ! -x "$inst/bin/prterun" ]; then
    t0=$(date +%s.%N)
    prrte_build || launch_die "building OpenPMIx/PRRTE failed (logs in $cache)"
    launch_log "OpenPMIx + PRRTE built in $(launch_since "$t0") s"
fi
flock -u 9
exec 9>&-
[ $build_only = 0 ] || exit 0

launch_begin prrte
export COHORT_PLUGIN_PATH=$top/.libs TEST_SRCDIR=$top
make -s -j"$(nproc)" tests/mpi/group_plugin tests/mpi/plugins >/dev/null || launch_die "build failed"

# The plugins again, on OpenPMIx 5.0.5: a copy of the source (autotools will not configure
# out of a tree configured in place), configured --with-pmix, the four modules only (no torch
# and no CUDA checks: configure's torch check alone compiles torch's headers, ~35 s of CPU).
pmix5_build() {
    mkdir -p "$T/pmix5" &&
        tar -C "$top" --exclude=./.git --exclude='*.o' --exclude='*.lo' --exclude='*.la' \
            --exclude=.libs --exclude=.deps -cf - . | tar -C "$T/pmix5" -xf - &&
        (cd "$T/pmix5" && { [ ! -f Makefile ] || make -s distclean >/dev/null 2>&1; } &&
            ./configure -q --with-pmix="$inst" --without-mpi --without-torch --without-cuda \
                >"$T/pmix5.configure.log" 2>&1 &&
            make -s -j"$(nproc)" cohort_pmix_dmodex.la cohort_pmix_fence.la cohort_pmix_global.la \
                cohort_pmix_group.la >"$T/pmix5.make.log" 2>&1)
}
t0=$(date +%s.%N)
pmix5_build || { tail -20 "$T"/pmix5.*.log; launch_die "building the plugins against $inst failed"; }
plugins5=$T/pmix5/.libs
launch_log "plugins built against OpenPMIx 5.0.5 in $(launch_since "$t0") s"

prte_run() { # NP "ENV..." PROG ARGS...: one prterun, bounded; plugins from COHORT_PLUGIN_PATH
    local np=$1 envs=$2 e xs=()
    shift 2
    for e in $envs; do
        xs+=(-x "$e")
    done
    launch_fg timeout -k 10 "$LAUNCH_TIMEOUT" env -u LD_LIBRARY_PATH \
        "$inst/bin/prterun" --allow-run-as-root -n "$np" --map-by :oversubscribe \
        -x COHORT_PLUGIN_PATH -x TEST_SRCDIR ${COHORT_TIMEOUT:+-x COHORT_TIMEOUT} "${xs[@]}" "$@" </dev/null
}

failed=0 passed=0 skipped=0
ok() { launch_log "$1: ok${2:+ ($2)}"; passed=$((passed + 1)); }
bad() {
    echo "!! $1 failed"
    [ -f "$T/run.log" ] && grep -v '^\[.*PMIX ERROR' "$T/run.log" | tail -20
    failed=$((failed + 1))
}
peers() { # NP "ENV...": cohort_peers --json, checked
    local t0
    t0=$(date +%s.%N)
    if prte_run "$1" "$2" "$top/tools/cohort_peers" --layout tp=2,pp=2 --json >"$T/peers.json" \
        2>"$T/run.log" && python3 tests/launch/check_peers.py --world "$1" <"$T/peers.json"; then
        ok "cohort_peers -n $1 $2" "prterun wall $(launch_since "$t0") s"
    else
        head -c 1500 "$T/peers.json"
        bad "cohort_peers prterun -n $1 $2"
    fi
}

# 1. Debian's plugins (PMIx 4.2.2 client).
launch_programs prte_run prterun
for np in 4 8; do
    [ "$np" -gt "$LAUNCH_MAX_RANKS" ] && continue
    peers "$np" ""
done

# 2. The group plugin for real: plugins on the server's PMIx. COHORT_TIMEOUT well under
# LAUNCH_TIMEOUT: PRRTE does not bound group operations (it ignores PMIX_TIMEOUT there), so a
# construct or destruct that never completes is reported by cohort, naming what it waited for,
# before the launcher's bound kills the job (seen once in ~230 cohort_peers runs; not since).
COHORT_PLUGIN_PATH=$plugins5
export COHORT_TIMEOUT=${COHORT_TIMEOUT:-60}
for np in 4 8; do
    [ "$np" -gt "$LAUNCH_MAX_RANKS" ] && continue
    what="group_plugin -n $np (PMIx 5.0.5 plugins)"
    t0=$(date +%s.%N)
    if prte_run "$np" "COHORT_PMIX_PLUGIN=group TEST_GROUP_PLUGIN=works COHORT_LOG=debug" \
        "$top/tests/mpi/group_plugin" >"$T/run.log" 2>&1 &&
        grep -q '^group_plugin: passed$' "$T/run.log" &&
        python3 tests/launch/check_group_ids.py --world "$np" --min-groups $((np / 2 + 6)) <"$T/run.log" \
            >"$T/ids.txt"; then
        ok "$what" "$(launch_since "$t0") s; $(cat "$T/ids.txt")"
    else
        bad "$what"
    fi
done
if prte_run 4 "COHORT_PMIX_PLUGIN=group" "$top/tests/mpi/plugins" >"$T/run.log" 2>&1 &&
    grep -q '^plugins: passed$' "$T/run.log"; then
    ok "plugins -n 4 COHORT_PMIX_PLUGIN=group (PMIx 5.0.5 plugins)"
else
    bad "plugins -n 4 COHORT_PMIX_PLUGIN=group (PMIx 5.0.5 plugins)"
fi
peers 8 "COHORT_PMIX_PLUGIN=group"

unset COHORT_TIMEOUT

# 3. The group plugin on Debian's 4.2.2 client under the 5.0.5 server: refused at init, loudly
# and naming both versions; then the same with the version check blinded (PMIX_VERSION faked
# to the client's): the probe's context ids and destructs must give it away.
COHORT_PLUGIN_PATH=$top/.libs
what="group plugin, 4.2.2 client vs 5.0.5 server: refused"
if prte_run 2 "COHORT_PMIX_PLUGIN=group TEST_GROUP_PLUGIN=refused" \
    "$top/tests/mpi/group_plugin" >"$T/run.log" 2>&1 &&
    grep -q 'PMIx client library is 4\.2.* server is 5\.0' "$T/run.log"; then
    ok "$what" "$(grep -m1 -o 'PMIx client library is .*(PMIX_VERSION)' "$T/run.log")"
else
    bad "$what"
fi
client=$(grep -m1 -o 'client library is [^ ]*' "$T/run.log" | sed 's/.* //')
client=${client:-4.2.2}
what="group plugin, 4.2.2 client vs 5.0.5 server, version check blinded: probe refuses"
if prte_run 2 "COHORT_PMIX_PLUGIN=group TEST_GROUP_PLUGIN=refused" \
    env PMIX_VERSION="$client" "$top/tests/mpi/group_plugin" >"$T/run.log" 2>&1 &&
    grep -q 'COHORT_PMIX_PLUGIN=group: .*\(context id\|destruct\)' "$T/run.log"; then
    ok "$what" "$(grep -m1 -o 'the server .*) (client' "$T/run.log")"
else
    bad "$what"
fi

# Measurements (COHL_MEASURE=1; printed, never asserted): the exchange plugins side by side,
# all on the 5.0.5 plugins, 8 ranks, layout tp=2,pp=2.
if [ "${COHL_MEASURE:-0}" = 1 ]; then
    COHORT_PLUGIN_PATH=$plugins5
    for plugin in dmodex fence group global; do
        for _ in $(seq "${COHL_MEASURE_REPEAT:-3}"); do
            t0=$(date +%s.%N)
            prte_run 8 "COHORT_PMIX_PLUGIN=$plugin" "$top/tools/cohort_peers" --layout tp=2,pp=2 \
                --json >"$T/peers.json" 2>/dev/null
            launch_log "measure: $plugin cohort_peers -n 8 tp=2,pp=2: wall $(launch_since "$t0") s;" \
                "$(python3 tests/launch/check_peers.py --world 8 <"$T/peers.json" 2>&1)"
        done
        for _ in $(seq "${COHL_MEASURE_REPEAT:-3}"); do
            prte_run 8 "COHORT_PMIX_PLUGIN=$plugin" "$top/tools/cohort_bench" setup --layout tp=2,pp=2 \
                --iters 3 --no-mpi >"$T/setup.txt" 2>&1
            launch_log "measure: $plugin cohort_bench setup -n 8 tp=2,pp=2: $(grep '^setup:' "$T/setup.txt" || tail -3 "$T/setup.txt")"
        done
    done
fi
launch_log "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
