#!/bin/bash
# cohort under Slurm's srun --mpi=pmix, on a one-node Slurm started here by hand (no systemd):
# installs slurm-wlm and munge if missing, writes a private configuration in a temporary
# directory (loopback only, its own munge key and socket, its own ports), starts munged (as
# user munge), slurmctld and slurmd in the foreground of this script, waits until the node is
# idle, then runs each multi-rank test program's "run:" lines under srun and cohort_peers
# --json (checked by check_peers.py). Every daemon is stopped by its PID on the way out,
# whatever happened, and the temporary directory removed (kept with COHL_KEEP=1).
#
#   bash tests/launch/slurm.sh            # from a tree built by scripts/setup.sh, as root
# Settings: LAUNCH_PROGS (the programs, default in common.sh), LAUNCH_MAX_RANKS (8),
# LAUNCH_TIMEOUT (120 s per srun), COHL_SLURM_PORT (default: the first free pair from 16817; slurmd uses the next port),
# COHL_MEASURE=1 (also time srun against mpirun), COHL_KEEP=1 (keep the directory and logs).
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/launch/common.sh
. tests/launch/slurm_lib.sh
launch_need_root
launch_apt_install slurm-wlm munge python3
[ -f /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix_v4.so ] ||
    [ -n "$(find /usr/lib -name 'mpi_pmix*.so' 2>/dev/null | head -1)" ] ||
    launch_die "Slurm's PMIx plugin (mpi_pmix) is not installed"
launch_build
launch_make tests/mpi/group_plugin
top=$PWD
# Two free ports in a row from 16817 on (slurmctld's, slurmd's), unless COHL_SLURM_PORT says:
# another copy of the suite may run its own Slurm on this machine at the same time. Where
# this copy starts looking depends on its PID, so two copies rarely race for the same pair.
port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }
port=${COHL_SLURM_PORT:-}
if [ -z "$port" ]; then
    for i in $(seq 0 99); do
        p=$((16817 + 2 * (($$ + i) % 100)))
        port_free "$p" && port_free $((p + 1)) && { port=$p; break; }
    done
    [ -n "$port" ] || launch_die "no two free ports in a row from 16817 to 17017"
fi
node=cohl-n0

launch_stop_own() { # jobs first, then the daemons by PID, newest first
    slurm_stop
}
launch_after_kill() {
    if [ "$1" != 0 ]; then
        slurm_logs
    fi
}
launch_begin slurm

for p in "$port" $((port + 1)); do
    ss -Hltn "sport = :$p" | grep -q . && launch_die "port $p is in use (COHL_SLURM_PORT)"
done

# One node of 16 CPUs on 2 cores (config_overrides lets slurmd believe it), all on 127.0.0.1.
slurm_munge_start "$T"
slurm_conf "$(hostname -s)" 127.0.0.1 "$port" 16 "$node:127.0.0.1:$(hostname)"
t0=$(date +%s.%N)
slurm_daemon slurmctld -D -i
slurm_daemon slurmd -D -N "$node"
slurm_wait_idle 1 || launch_die "node $node not idle: $(sinfo -h -N -o '%N %T %E' 2>&1)"
launch_log "Slurm up: node $node idle after $(launch_since "$t0") s"

export COHORT_PLUGIN_PATH=$top/.libs TEST_SRCDIR=$top
failed=0 passed=0 skipped=0
srun_run() { # NP "ENV..." PROG ARGS...: one srun, bounded; srun passes the environment on
    local np=$1 envs=$2
    shift 2
    # shellcheck disable=SC2086
    launch_fg timeout -k 10 "$LAUNCH_TIMEOUT" env $envs srun --mpi=pmix -N 1 -n "$np" \
        --kill-on-bad-exit=1 --wait=30 "$@" </dev/null
}
launch_programs srun_run srun

# cohort_peers: the JSON is checked, and its wall time taken (srun's, start to exit).
for np in 4 8; do
    [ "$np" -gt "$LAUNCH_MAX_RANKS" ] && continue
    launch_log "cohort_peers: srun -n $np --layout tp=2,pp=2 --json"
    t0=$(date +%s.%N)
    if srun_run "$np" "" tools/cohort_peers --layout tp=2,pp=2 --json >"$T/peers.json" \
        2>"$T/run.log" &&
        python3 tests/launch/check_peers.py --world "$np" <"$T/peers.json"; then
        launch_log "cohort_peers -n $np: srun wall $(launch_since "$t0") s"
        passed=$((passed + 1))
    else
        echo "!! cohort_peers -n $np failed"
        head -c 2000 "$T/peers.json"
        tail -30 "$T/run.log"
        failed=$((failed + 1))
    fi
done

# The group plugin: Slurm 22.05's PMIx server does not construct groups, so cohort_init must
# refuse it at once, saying so (not hang, not succeed).
if srun_run 2 "COHORT_PMIX_PLUGIN=group TEST_GROUP_PLUGIN=refused" tests/mpi/group_plugin \
    >"$T/run.log" 2>&1 && grep -q 'does not implement PMIx_Group_construct' "$T/run.log"; then
    launch_log "group_plugin: srun -n 2 COHORT_PMIX_PLUGIN=group: refused, as it must be"
    passed=$((passed + 1))
else
    echo "!! group_plugin: srun -n 2 COHORT_PMIX_PLUGIN=group was not refused with the reason"
    tail -20 "$T/run.log"
    failed=$((failed + 1))
fi

# Measurements (COHL_MEASURE=1; printed, never asserted): cohort_peers wall time and
# cohort_bench setup at 8 ranks, srun against mpirun on this same host.
if [ "${COHL_MEASURE:-0}" = 1 ]; then
    mpirun_run() {
        launch_fg timeout -k 10 "$LAUNCH_TIMEOUT" mpirun --allow-run-as-root --oversubscribe --bind-to none \
            -x COHORT_PLUGIN_PATH -np "$@" </dev/null
    }
    for launcher in srun mpirun; do
        for _ in 1 2 3; do
            t0=$(date +%s.%N)
            if [ $launcher = srun ]; then
                srun_run 8 "" tools/cohort_peers --layout tp=2,pp=2 --json >"$T/peers.json"
            else
                mpirun_run 8 tools/cohort_peers --layout tp=2,pp=2 --json >"$T/peers.json"
            fi
            launch_log "measure: $launcher cohort_peers -n 8 tp=2,pp=2: wall $(launch_since "$t0") s;" \
                "$(python3 tests/launch/check_peers.py --world 8 <"$T/peers.json" 2>&1)"
        done
        if [ $launcher = srun ]; then
            srun_run 8 "" tools/cohort_bench setup --layout tp=2,pp=2 --iters 3 >"$T/setup.txt" 2>&1
        else
            mpirun_run 8 tools/cohort_bench setup --layout tp=2,pp=2 --iters 3 >"$T/setup.txt" 2>&1
        fi
        launch_log "measure: $launcher cohort_bench setup -n 8 tp=2,pp=2: $(grep '^setup:' "$T/setup.txt" || tail -3 "$T/setup.txt")"
    done
fi

launch_log "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
