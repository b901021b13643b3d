#!/bin/bash
# Launchers and hosts beyond `make check`'s single-host mpirun (tests/launch; root, iproute2;
# Slurm and munge are installed if missing). Started by scripts/test.sh in the background once
# its install check passed, on the tree it built. scripts/launch-tests.sh [SCRIPT...]: the
# scripts named (tests/launch/prrte.sh, ...) instead of the list below, in the same mode.
#   tests/launch/slurm.sh    srun --mpi=pmix on a one-node Slurm started by hand      (~2 min)
#   tests/launch/linkcut.sh  2 hosts (network namespaces), a data link cut mid-run    (~1 min)
#   tests/launch/prrte.sh    prterun (PRRTE 3.0.14 + OpenPMIx 5.0.11 from Open MPI's wheel
#                            on PyPI, pinned, installed once into a cached virtual
#                            environment in ~5 s); groups, wiring, p2p, layout and
#                            cohort_peers; the plugins relinked to the wheel's libpmix
#                            and the group plugin with them; the 4.2.2 client's group
#                            plugin refused                                          (~0.5 min)
#   tests/launch/hosts.sh        2 and 3 hosts, the programs, cohort_peers shm vs tcp: here the
#                                quick programs (groups, wiring, p2p, finalize_peer)    (~4 min)
#   tests/launch/slurm_hosts.sh  two-node Slurm on 2 hosts, the same                  (~5 min)
# COHORT_LAUNCH_HOSTS=1 runs hosts.sh with every program and adds slurm_hosts.sh (CI time keeps
# them out by default). Since engine v2 (goodbye at finalize) cohort_peers across hosts passes
# every run; before, 30-70% failed. COHORT_LAUNCH_TESTS=0 skips them all.
# Quick (the default, scripts/test.sh): slurm.sh runs the collective suites (coll_move,
# coll_reduce) once each under srun, their first run line (make check ran every configuration
# under mpirun), and hosts.sh runs each cohort_peers configuration once. COHORT_LAUNCH_FULL=1
# (scripts/test.sh --full): every run line under srun, cohort_peers 3 times per configuration.
set -u
cd "$(dirname "$0")/.." || exit 1
# Its switches, read here and taken out of the environment of everything it starts: cohort
# warns about a COHORT_ setting it does not know in every rank's cohort_init, and a test that
# reads a program's output would take the warning for the program's.
skip_all=${COHORT_LAUNCH_TESTS:-1}
all_hosts=${COHORT_LAUNCH_HOSTS:-0}
full=${COHORT_LAUNCH_FULL:-0}
prrte_progs=${COHORT_LAUNCH_PRRTE_PROGS:-groups wiring p2p layout}
hosts_progs=${COHORT_LAUNCH_HOSTS_PROGS:-groups wiring p2p finalize_peer}
unset COHORT_LAUNCH_TESTS COHORT_LAUNCH_HOSTS COHORT_LAUNCH_FULL COHORT_LAUNCH_PRRTE_PROGS \
    COHORT_LAUNCH_HOSTS_PROGS
if [ "$skip_all" = 0 ]; then
    echo "launch-tests: skipped (COHORT_LAUNCH_TESTS=0)"
    exit 0
fi
scripts="tests/launch/slurm.sh tests/launch/linkcut.sh tests/launch/prrte.sh tests/launch/hosts.sh"
[ "$all_hosts" = 1 ] && scripts="$scripts tests/launch/slurm_hosts.sh"
# Scripts named on the command line run alone, in the same modes (scripts/mutations.sh).
[ $# = 0 ] || scripts="$*"
# Quick mode leaves out what repeats a check another launch makes: the progress modes under
# srun, prterun and across hosts (LAUNCH_QUICK=1, tests/launch/common.sh: the engine's wait
# loop, no launcher's), p2p and finalize_peer on 3 hosts (COHL_HOSTS3_PROGS, hosts.sh: a pair
# of ranks is on one host or two, both met on 2 hosts).
if [ "$full" != 1 ]; then
    export LAUNCH_ONE_RUN=${LAUNCH_ONE_RUN-coll_move coll_reduce}
    export COHL_PEERS_REPEAT=${COHL_PEERS_REPEAT:-1}
    export LAUNCH_QUICK=1
    [ "$all_hosts" = 1 ] || export COHL_HOSTS3_PROGS=${COHL_HOSTS3_PROGS:-groups wiring}
fi
status=0
for s in $scripts; do
    start=$(date +%s)
    # Each script bounds its own runs; this bounds the script as a whole too.
    # prterun: the quick programs only; the collective suites already ran under mpirun and srun.
    progs=${LAUNCH_PROGS:-}
    [ "$s" = tests/launch/prrte.sh ] && progs=$prrte_progs
    [ "$s" = tests/launch/hosts.sh ] && [ "$all_hosts" != 1 ] && progs=$hosts_progs
    LAUNCH_PROGS=$progs timeout -k 30 1800 bash "$s" >"$s.log" 2>&1
    rc=$?
    # A launch run once more (tests/launch/common.sh, launch_run_one) is said whatever the end.
    grep '^RETRY: ' "$s.log" || true
    case $rc in
    0) echo "PASS: $s ($(($(date +%s) - start)) s)" ;;
    77) echo "SKIP: $s ($(tail -1 "$s.log"))" ;;
    *)
        echo "FAIL: $s (rc $rc; log $s.log)"
        tail -40 "$s.log"
        status=1
        ;;
    esac
done
[ "$all_hosts" = 1 ] ||
    echo "launch-tests: slurm_hosts.sh not run, hosts.sh with the quick programs (COHORT_LAUNCH_HOSTS=1: all)"
[ "$full" = 1 ] ||
    echo "launch-tests: quick: the first run line only of ${LAUNCH_ONE_RUN:-nothing} under srun, no COHORT_PROGRESS lines (srun, prterun, hosts), ${COHL_HOSTS3_PROGS:-every program} on 3 hosts, cohort_peers $COHL_PEERS_REPEAT time(s) per configuration (COHORT_LAUNCH_FULL=1: all)"
exit $status
