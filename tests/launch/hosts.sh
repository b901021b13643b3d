#!/bin/bash
# cohort across "hosts": 3 hosts made of network namespaces on this machine (see netns.sh: a
# management and a data network on bridges, per-host IPC/UTS/mount namespaces and boot_id),
# Open MPI's mpirun started on cohl-h0 reaching the others through a launch agent that enters
# their namespaces. Runs each multi-rank test program's "run:" lines spread over 2 and over 3
# hosts, then cohort_peers --json on 1, 2 and 3 hosts, checked by check_peers.py against where
# the ranks really are: peers on the same host over shared memory, on another host over tcp.
# Removes every namespace, process and file it made, whatever happened.
#
#   bash tests/launch/hosts.sh              # from a tree built by scripts/setup.sh, as root
# Settings: LAUNCH_PROGS (the programs, default in common.sh), LAUNCH_MAX_RANKS (8),
# LAUNCH_TIMEOUT (120 s per mpirun), COHL_PEERS_REPEAT (3: cohort_peers runs per
# configuration; each must pass), COHL_HOSTS3_PROGS (the programs on 3 hosts; default
# LAUNCH_PROGS), COHL_MEASURE=1 (also print timings), COHL_KEEP=1.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/launch/common.sh
. tests/launch/netns.sh
launch_need_root
launch_apt_install iproute2 util-linux python3
launch_build
top=$PWD
repeat=${COHL_PEERS_REPEAT:-3}

launch_after_kill() {
    hosts_remove
}
launch_begin hosts
export COHORT_PLUGIN_PATH=$top/.libs TEST_SRCDIR=$top

hosts_make "$T" 3 || launch_die "could not make the hosts"
launch_log "3 hosts up: $HOSTS_NETNS"

failed=0 passed=0 skipped=0
# Settings of a run line as mpirun -x options, so that they reach the remote hosts too.
xopts() {
    local e
    for e in "$@"; do
        printf -- '-x %s ' "$e"
    done
}
# One mpirun over the first nh hosts, with a run line's settings passed on to every host.
hosts_run() { # NP "ENV..." PROG
    # shellcheck disable=SC2046,SC2086
    hosts_mpirun "$nh" "$1" $(xopts $2) "$3"
}
# On 3 hosts, COHL_HOSTS3_PROGS where set (scripts/launch-tests.sh's quick mode: groups and
# wiring, which read the node map: who shares a node decides a group's shared segment and each
# peer's transport, and 3 hosts make groups spread over more than two nodes, unevenly; p2p and
# finalize_peer work pair by pair, and a pair is on one host or on two, each met on 2 hosts).
for nh in 2 3; do
    progs=$LAUNCH_PROGS
    [ "$nh" = 2 ] || progs=${COHL_HOSTS3_PROGS:-$LAUNCH_PROGS}
    LAUNCH_PROGS=$progs launch_programs hosts_run "mpirun on $nh hosts"
done

# Device buffers across hosts, under the fake CUDA runtime (a build with CUDA; see
# tests/gpu/fake_check.sh): 4 ranks on 2 hosts, so the world spans nodes (no vote, no IPC) and
# every collective's device data crosses tcp staged, whole (default) and transfer by transfer
# with asynchronous copies (the rings forced, COHORT_CUDA_PIPELINE_MIN=0).
if [ -f "$top/tests/gpu/fake/libcudart.so.13" ] && [ -f "$top/tests/gpu/fake-kernels/cohort_cuda.so" ]; then
    fake="LD_LIBRARY_PATH=$top/tests/gpu/fake COHORT_PLUGIN_PATH=$top/tests/gpu/fake-kernels:$top/.libs"
    # hosts_run with the fake's settings; the run's output (in $T/run.log) must say it passed
    hosts_run_fake() { # NP "ENVS" PROG
        hosts_run "$1" "$fake $2" "$3" && grep -q 'cuda_coll: passed' "$T/run.log"
    }
    nh=2
    for envs in "" "COHORT_CUDA_PIPELINE_MIN=0 COHORT_ALGO_ALLREDUCE=ring COHORT_ALGO_REDUCE_SCATTER=ring COHORT_ALGO_ALLGATHER=ring COHORT_ALGO_ALLTOALL=pairwise"; do
        launch_run_one hosts_run_fake "mpirun on 2 hosts" 4 "$envs" "$top/tests/mpi/cuda_coll" \
            "cuda_coll (fake CUDA)"
    done
else
    launch_log "cuda_coll (fake CUDA) across hosts: skipped (built without CUDA)"
    skipped=$((skipped + 1))
fi

# cohort_peers: 1 host (a baseline for the timings), 2 hosts, 3 hosts.
for cfg in "1 4 tp=2,pp=2" "1 8 tp=2,pp=2" "2 4 tp=2,pp=2" "2 8 tp=2,pp=2" "3 6 tp=2,pp=3"; do
    read -r nh np layout <<<"$cfg"
    [ "$np" -gt "$LAUNCH_MAX_RANKS" ] && continue
    map=$(hosts_map "$nh" "$np")
    [ "$(echo "$map" | tr , '\n' | sort -u | wc -l)" = "$nh" ] ||
        launch_die "$np ranks on $nh hosts landed on '$map'"
    for i in $(seq 1 "$repeat"); do
        t0=$(date +%s.%N)
        if hosts_mpirun "$nh" "$np" "$top/tools/cohort_peers" --layout "$layout" --json \
            >"$T/peers.json" 2>"$T/run.log" &&
            python3 tests/launch/check_peers.py --world "$np" --hosts "$map" \
                <"$T/peers.json" >"$T/check.txt"; then
            launch_log "cohort_peers -np $np --layout $layout on $nh hosts ($map), run $i: wall" \
                "$(launch_since "$t0") s; $(sed 's/^check_peers: //' "$T/check.txt")"
            passed=$((passed + 1))
        else
            echo "!! cohort_peers -np $np on $nh hosts, run $i failed"
            tail -c 1500 "$T/peers.json"
            tail -20 "$T/run.log"
            failed=$((failed + 1))
        fi
    done
done

# Measurements (COHL_MEASURE=1; printed, never asserted): cohort_bench setup at 8 ranks on 1
# and 2 hosts; allreduce across the veth, cohort against Open MPI (ob1 + its tcp BTL on the
# data network) in the same processes, 1 rank per host and 2 per host.
if [ "${COHL_MEASURE:-0}" = 1 ]; then
    mpi_tcp="--mca pml ob1 --mca btl tcp,self,vader --mca btl_tcp_if_include 198.18.2.0/24"
    for nh in 1 2; do
        # shellcheck disable=SC2086
        hosts_mpirun "$nh" 8 $mpi_tcp "$top/tools/cohort_bench" setup --layout tp=2,pp=2 \
            --iters 3 >"$T/setup.txt" 2>&1
        launch_log "measure: cohort_bench setup -np 8 tp=2,pp=2 on $nh hosts:" \
            "$(grep '^setup:' "$T/setup.txt" || tail -3 "$T/setup.txt")"
    done
    for np in 2 4; do
        # shellcheck disable=SC2086
        hosts_mpirun 2 "$np" $mpi_tcp "$top/tools/cohort_bench" allreduce -b 8 -e 4M -f 8 \
            >"$T/allreduce.txt" 2>&1
        launch_log "measure: allreduce -np $np on 2 hosts (cohort vs Open MPI tcp on data0):"
        cat "$T/allreduce.txt"
    done
fi

launch_log "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
