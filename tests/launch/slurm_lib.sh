# A private Slurm started by hand (no systemd), for tests/launch/slurm.sh and slurm_hosts.sh
# (sourced after common.sh; bash, root). Everything lives under one directory: a munge key,
# socket and logs of its own, the configuration, state, spool and logs of every daemon.
# Daemons run in the foreground of the script, so their PIDs are known and stopped by PID.

SLURM_PIDS="" # newest first, the order they are stopped in
SLURM_DIR=
SLURM_CLIENT=${SLURM_CLIENT:-} # words before a client command (sinfo, scancel): a namespace entry

# slurm_munge_start DIR: munged as user munge with its own key and socket under DIR.
slurm_munge_start() {
    SLURM_DIR=$1
    mkdir -p "$1/munge" "$1/munge-run"
    dd if=/dev/urandom of="$1/munge/munge.key" bs=1024 count=1 status=none
    chown -R munge:munge "$1/munge" "$1/munge-run"
    chmod 700 "$1/munge"
    chmod 755 "$1/munge-run" # munged wants its socket's directory searchable by all
    chmod 400 "$1/munge/munge.key"
    SLURM_MUNGE_SOCK=$1/munge-run/munge.socket
    setpriv --reuid=munge --regid=munge --init-groups munged -F \
        --key-file="$1/munge/munge.key" --socket="$SLURM_MUNGE_SOCK" \
        --pid-file="$1/munge/munged.pid" --seed-file="$1/munge/munged.seed" \
        --log-file="$1/munge/munged.log" 2>"$1/munged.out" &
    SLURM_PIDS="$! $SLURM_PIDS"
    launch_wait_for sh -c "munge -S '$SLURM_MUNGE_SOCK' -n | unmunge -S '$SLURM_MUNGE_SOCK'" ||
        launch_die "munged did not come up: $(tail -3 "$1/munge/munged.log" 2>/dev/null)"
}

# slurm_conf CTLD_HOST CTLD_ADDR PORT CPUS NODE:ADDR:HOSTNAME...: writes $SLURM_DIR/slurm.conf
# and exports SLURM_CONF. Per-node paths use %n, so several slurmd can share the directory
# (and Slurm's PMIx plugin its default per-node directory under the spool).
slurm_conf() {
    local host=$1 addr=$2 port=$3 cpus=$4 n names=
    shift 4
    mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool"
    cat >"$SLURM_DIR/slurm.conf" <<EOF
ClusterName=cohl
MailProg=/bin/true
SlurmctldHost=$host($addr)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SLURM_MUNGE_SOCK
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool/%n
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.%n.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
SchedulerType=sched/builtin
KillWait=5
EOF
    for n in "$@"; do
        IFS=: read -r name naddr nhost <<<"$n"
        mkdir -p "$SLURM_DIR/spool/$name"
        echo "NodeName=$name NodeAddr=$naddr NodeHostname=$nhost CPUs=$cpus State=UNKNOWN" \
            >>"$SLURM_DIR/slurm.conf"
        names="$names${names:+,}$name"
    done
    echo "PartitionName=cohl Nodes=$names Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" \
        >>"$SLURM_DIR/slurm.conf"
    # Slurm's PMIx plugin keeps its per-step directories here rather than in /tmp.
    mkdir -p "$SLURM_DIR/pmix"
    echo "PMIxCliTmpDirBase=$SLURM_DIR/pmix" >"$SLURM_DIR/mpi.conf"
    export SLURM_CONF=$SLURM_DIR/slurm.conf
}

# slurm_node_conf NODE: a configuration directory of NODE's own: the same slurm.conf and an
# mpi.conf whose PMIxCliTmpDirBase is NODE's. Several slurmd on one filesystem need it: by
# default Slurm's PMIx plugin makes /tmp/spmix_appdir_<uid>_<job>.<step> on every node, and
# the second node of a step then fails ("File exists"). Prints the slurm.conf to start with.
slurm_node_conf() {
    local d=$SLURM_DIR/conf.$1
    mkdir -p "$d" "$SLURM_DIR/pmix/$1"
    cp "$SLURM_DIR/slurm.conf" "$d/slurm.conf"
    echo "PMIxCliTmpDirBase=$SLURM_DIR/pmix/$1" >"$d/mpi.conf"
    echo "$d/slurm.conf"
}

# slurm_daemon PREFIX... CMD...: starts a daemon in the background (PREFIX may be an entry
# into a namespace, e.g. hosts_in cohl-h1) and records its PID.
slurm_daemon() {
    "$@" >>"$SLURM_DIR/daemons.out" 2>&1 &
    SLURM_PIDS="$! $SLURM_PIDS"
}

# slurm_wait_idle N: waits (90 s at most) until N nodes are idle while every daemon lives.
slurm_idle() {
    local pid
    for pid in $SLURM_PIDS; do
        kill -0 "$pid" 2>/dev/null || return 2
    done
    # shellcheck disable=SC2086
    [ "$($SLURM_CLIENT sinfo -h -N -o %T 2>/dev/null | grep -cx idle)" = "$1" ]
}
slurm_wait_idle() {
    local deadline=$(($(date +%s) + 90)) rc
    while :; do
        slurm_idle "$1"
        rc=$?
        [ $rc = 0 ] && return 0
        [ $rc = 2 ] && { echo "a Slurm daemon died"; return 1; }
        [ "$(date +%s)" -ge "$deadline" ] && return 1
        sleep 0.2
    done
}

# Stops the jobs, then every daemon by PID (newest first), then what they left behind.
slurm_stop() {
    local pid
    # shellcheck disable=SC2086
    [ -n "$SLURM_PIDS" ] && timeout 10 $SLURM_CLIENT scancel --quiet --full -u root >/dev/null 2>&1
    for pid in $SLURM_PIDS; do
        launch_stop_pid "$pid"
    done
    SLURM_PIDS=
}

# On failure: the end of each log.
slurm_logs() {
    local f
    for f in "$SLURM_DIR"/slurmctld.log "$SLURM_DIR"/slurmd.*.log "$SLURM_DIR"/daemons.out; do
        [ -f "$f" ] && { echo "---- tail $f"; tail -15 "$f"; }
    done
}
