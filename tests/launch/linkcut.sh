#!/bin/bash
# A network that fails: 4 ranks on 2 hosts (netns.sh) run allreduces in the world group and in
# each host's group (linkcut.c); once they flow, one host's data link is cut (ip link set data0
# down inside its namespace; the management network that mpirun and PMIx use stays up). Every
# rank must see its world allreduce fail with COHORT_ERR_PEER_FAILED or COHORT_ERR_TIMEOUT
# (COHORT_TIMEOUT bounds every wait), its host's group must go on working, and the job must
# end by itself, well inside the bound of the run. Done once cutting the far host (cohl-h1)
# and once cutting the host mpirun runs on (cohl-h0). Removes everything it made.
#
#   bash tests/launch/linkcut.sh            # from a tree built by scripts/setup.sh, as root
# Settings: COHL_LINKCUT_TIMEOUT (COHORT_TIMEOUT for the ranks, 10 s), LAUNCH_TIMEOUT (180 s
# per job), COHL_KEEP=1, COHORT_LOG (passed to the ranks).
set -u
cd "$(dirname "$0")/../.." || exit 1
# 180 s per mpirun unless told (common.sh scales it with the load, and sets 120 when unset).
LAUNCH_TIMEOUT=${LAUNCH_TIMEOUT:-180}
. tests/launch/common.sh
. tests/launch/netns.sh
launch_need_root
launch_apt_install iproute2 util-linux
launch_build
top=$PWD
export LAUNCH_TIMEOUT
export COHORT_TIMEOUT=${COHL_LINKCUT_TIMEOUT:-10}

launch_after_kill() {
    hosts_remove
}
launch_begin linkcut
export COHORT_PLUGIN_PATH=$top/.libs TEST_SRCDIR=$top

cc -std=gnu11 -Wall -Wextra -Werror -Iinclude -o "$T/linkcut" tests/launch/linkcut.c \
    -L.libs -lcohort -Wl,-rpath,"$top/.libs" || launch_die "building linkcut failed"
hosts_make "$T" 2 || launch_die "could not make the hosts"
map=$(hosts_map 2 4)
[ "$map" = cohl-h0,cohl-h0,cohl-h1,cohl-h1 ] || launch_die "4 ranks on 2 hosts landed on '$map'"

failed=0
for victim in cohl-h1 cohl-h0; do
    export LINKCUT_READY=$T/ready.$victim LINKCUT_CUT=$T/cut.$victim
    hosts_links_up || launch_die "links not up again"
    launch_log "cut $victim's data link mid-run (COHORT_TIMEOUT=$COHORT_TIMEOUT)"
    t0=$(date +%s.%N)
    hosts_mpirun 2 4 -x COHORT_TIMEOUT -x LINKCUT_READY -x LINKCUT_CUT ${COHORT_LOG:+-x COHORT_LOG} \
        "$T/linkcut" "$map" \
        >"$T/out.$victim" 2>&1 &
    job=$!
    job_gone() { ! kill -0 "$job" 2>/dev/null; }
    flowing() { test -f "$LINKCUT_READY" || job_gone; }
    LAUNCH_WAIT_S=90 launch_wait_for flowing
    if ! test -f "$LINKCUT_READY"; then
        echo "!! cut $victim: traffic never flowed"
        kill -TERM "$job" 2>/dev/null
        wait "$job"
        tail -30 "$T/out.$victim"
        failed=$((failed + 1))
        continue
    fi
    # The time first, then the file appears whole: the ranks read it.
    date +%s.%N >"$T/cut.tmp"
    hosts_in "$victim" ip link set data0 down
    mv "$T/cut.tmp" "$LINKCUT_CUT"
    wait "$job"
    rc=$?
    lines=$(grep -c '^linkcut: rank' "$T/out.$victim")
    if [ "$rc" = 0 ] && [ "$lines" = 4 ]; then
        launch_log "cut $victim: ok, job ended $(launch_since "$t0") s after its start"
        grep '^linkcut: rank' "$T/out.$victim" | sed 's/^/    /'
    else
        echo "!! cut $victim: rc $rc (124: the job hung past $LAUNCH_TIMEOUT s), $lines of 4 ranks reported"
        tail -40 "$T/out.$victim"
        failed=$((failed + 1))
    fi
done
[ "$failed" = 0 ]
