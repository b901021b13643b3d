# "Hosts" on one machine, for tests/launch/hosts.sh and linkcut.sh (sourced after common.sh;
# bash, root). A host is
#   - a network namespace with two veth links, mgmt0 (198.18.1.0/24, what the launcher's
#     daemons and PMIx use) and data0 (198.18.2.0/24, what UCX is told to use), both ending on
#     bridges in one more namespace, the switch: no address exists outside these namespaces
#     (198.18.0.0/15 is reserved for benchmarking and never routed);
#   - a holder process that owns the host's IPC namespace, UTS namespace (hostname cohl-hN) and
#     mount namespace (its own boot_id bind-mounted over /proc/sys/kernel/random/boot_id, an
#     /etc/hosts naming every host, /sys of its network namespace, with the cgroup tree
#     mounted again for slurmd). UCX decides "same machine"
#     from the boot_id and shared-memory reachability from the IPC namespace, so peers on
#     different hosts use tcp, peers on one host shared memory;
#   - an entry point, `$HOSTS_DIR/agent HOST CMD...`, which runs CMD inside HOST as ssh would
#     (the words joined and given to sh -c): Open MPI's plm_rsh_agent.
# Everything made is named cohl-<id>-*: hosts_remove deletes exactly that.

HOSTS_N=0
HOSTS_ID=
HOSTS_DIR=
HOSTS_NETNS=""   # the namespaces made, the switch first
HOSTS_HOLDERS="" # the holders' PIDs

# hosts_make DIR N: N hosts cohl-h0..cohl-h(N-1), state under DIR (which must exist).
hosts_make() {
    local dir=$1 n=$2 i ns sw
    HOSTS_DIR=$dir
    HOSTS_N=$n
    HOSTS_ID=$(basename "$dir" | tr -dc 'a-zA-Z0-9' | tail -c 7)
    sw=cohl-$HOSTS_ID-sw
    ip netns add "$sw" || return 1
    HOSTS_NETNS=$sw
    ip -n "$sw" link set lo up
    ip -n "$sw" link add name swm type bridge && ip -n "$sw" link set swm up || return 1
    ip -n "$sw" link add name swd type bridge && ip -n "$sw" link set swd up || return 1
    : >"$dir/hosts"
    for i in $(seq 0 $((n - 1))); do
        echo "198.18.1.$((i + 1)) cohl-h$i" >>"$dir/hosts"
    done
    # The new /sys of ip netns exec hides the cgroup tree, which slurmd needs: the holders
    # mount again what is mounted under /sys/fs/cgroup here (the same hierarchies).
    awk '$2 ~ "^/sys/fs/cgroup" { printf "mkdir -p %s && mount -t %s -o %s %s %s || exit 1\n", \
        $2, $3, $4, $1, $2 }' /proc/self/mounts >"$dir/cgroups.sh"
    for i in $(seq 0 $((n - 1))); do
        ns=cohl-$HOSTS_ID-h$i
        ip netns add "$ns" || return 1
        HOSTS_NETNS="$HOSTS_NETNS $ns"
        ip -n "$ns" link set lo up
        # Both ends made in their namespaces at once: no name ever exists in the root one.
        ip link add name mgmt0 netns "$ns" type veth peer name "m$i" netns "$sw" || return 1
        ip link add name data0 netns "$ns" type veth peer name "d$i" netns "$sw" || return 1
        ip -n "$sw" link set "m$i" master swm up && ip -n "$sw" link set "d$i" master swd up ||
            return 1
        ip -n "$ns" addr add "198.18.1.$((i + 1))/24" dev mgmt0 &&
            ip -n "$ns" addr add "198.18.2.$((i + 1))/24" dev data0 || return 1
        ip -n "$ns" link set mgmt0 up && ip -n "$ns" link set data0 up || return 1
        cat /proc/sys/kernel/random/uuid >"$dir/boot_id.h$i"
        # ip netns exec gives a mount namespace with the namespace's /sys; unshare adds the
        # host's own IPC, UTS and mount namespaces; the holder then sleeps until killed.
        ip netns exec "$ns" unshare --ipc --uts --mount --propagation private sh -c "
            hostname cohl-h$i &&
            mount --bind '$dir/boot_id.h$i' /proc/sys/kernel/random/boot_id &&
            mount --bind '$dir/hosts' /etc/hosts &&
            sh '$dir/cgroups.sh' &&
            touch '$dir/ready.h$i' && exec sleep 100000" &
        echo $! >"$dir/holder.h$i"
        disown $! # killed on removal: no job notice
        HOSTS_HOLDERS="$HOSTS_HOLDERS $!"
    done
    for i in $(seq 0 $((n - 1))); do
        LAUNCH_WAIT_S=30 launch_wait_for test -f "$dir/ready.h$i" || return 1
    done
    cat >"$dir/agent" <<EOF
#!/bin/sh
# Open MPI's launch agent: "agent HOST CMD..." runs CMD inside HOST, the way ssh would.
host=\$1
shift
pid=\$(cat "$dir/holder.\${host#cohl-}" 2>/dev/null) || { echo "agent: no host \$host" >&2; exit 255; }
exec nsenter -t "\$pid" --net --ipc --uts --mount -- sh -c "\$*"
EOF
    chmod 755 "$dir/agent"
    hosts_links_up
}

# Sets every host's links up and waits (30 s at most) until they are up and every bridge port
# forwards (no ping here: iputils is not installed everywhere).
hosts_links_up() {
    local i l
    for i in $(seq 0 $((HOSTS_N - 1))); do
        for l in mgmt0 data0; do
            ip -n "cohl-$HOSTS_ID-h$i" link set "$l" up || return 1
        done
    done
    LAUNCH_WAIT_S=30 launch_wait_for hosts_links_are_up
}
hosts_links_are_up() {
    local i l
    for i in $(seq 0 $((HOSTS_N - 1))); do
        for l in mgmt0 data0; do
            ip -n "cohl-$HOSTS_ID-h$i" -br link show "$l" | grep -q ' UP ' || return 1
        done
    done
    [ "$(bridge -n "cohl-$HOSTS_ID-sw" link show | grep -c 'state forwarding')" = $((2 * HOSTS_N)) ]
}

# hosts_in HOST CMD...: runs CMD (argv, not a shell line) inside HOST.
hosts_in() {
    local host=$1
    shift
    nsenter -t "$(cat "$HOSTS_DIR/holder.${host#cohl-}")" --net --ipc --uts --mount --wd="$PWD" \
        -- "$@"
}

# hosts_nsenter HOST: the words that enter HOST, to put before a command (a daemon started
# this way is its own PID: nsenter execs it).
hosts_nsenter() {
    echo nsenter -t "$(cat "$HOSTS_DIR/holder.${1#cohl-}")" --net --ipc --uts --mount --wd="$PWD" --
}

# Removes what hosts_make made: holders (by PID), then the namespaces (by name), which takes
# their veths and bridges with them.
hosts_remove() {
    local pid ns
    for pid in $HOSTS_HOLDERS; do
        kill -KILL "$pid" 2>/dev/null
    done
    for ns in $HOSTS_NETNS; do
        ip netns del "$ns" 2>/dev/null
    done
    HOSTS_NETNS=
    HOSTS_HOLDERS=
}

# hosts_mpirun NHOSTS NP [mpirun options] PROG ARGS...: an mpirun started on cohl-h0 that
# spreads NP ranks over the first NHOSTS hosts, ceil(NP/NHOSTS) slots each, filled in host
# order (ranks 0.. on cohl-h0), reaching the others through the agent; UCX on data0 only.
hosts_mpirun() {
    local nh=$1 np=$2 slots list='' i
    shift 2
    slots=$(((np + nh - 1) / nh))
    for i in $(seq 0 $((nh - 1))); do
        list="$list${list:+,}cohl-h$i:$slots"
    done
    launch_fg hosts_in cohl-h0 timeout -k 10 "$LAUNCH_TIMEOUT" mpirun --allow-run-as-root --oversubscribe \
        --bind-to none --host "$list" --map-by slot -np "$np" \
        --mca plm_rsh_agent "$HOSTS_DIR/agent" --mca plm_rsh_no_tree_spawn 1 \
        --mca oob_tcp_if_include 198.18.1.0/24 \
        -x COHORT_PLUGIN_PATH -x TEST_SRCDIR -x COHL_TAG -x UCX_NET_DEVICES=data0 "$@" </dev/null
}

# hosts_map NHOSTS NP: the host of each world rank, comma-separated in rank order, as the
# launcher really placed them (asked of the ranks, not computed).
hosts_map() {
    # shellcheck disable=SC2016 # expanded by the ranks' shell
    hosts_mpirun "$1" "$2" sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' |
        sort -n | awk '{ printf "%s%s", (NR > 1 ? "," : ""), $2 }'
}
