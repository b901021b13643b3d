#!/usr/bin/python3
"""Checks the output of `cohort_peers --json` read from stdin.

  check_peers.py --world N [--hosts H0,H1,...]

Always: the document parses; it has N ranks, each once, in order; every group holds the rank
that reported it; every wired peer is a member of one of the rank's groups (a rank wires only
peers of its own groups) and not itself; each wired peer names its transports; the distinct
group ids are as many as the layout has groups.
With --hosts (the host of each world rank, in rank order): a peer on the same host is reached
by shared memory only, a peer on another host by a network transport only (tcp here). Without
it every rank is on one host, so every peer must be shared memory.
A group of 2-64 members all on one host, whose first allreduce ran (no --no-traffic), ran it
on its shared segment with no endpoint (unless COHORT_ALGO_ALLREDUCE forces an algorithm);
a group of one member has no segment.
Prints one summary line (endpoints local/remote, mean wiring time of each) and exits 1 on the
first failed check, naming it.
"""
import argparse
import json
import os
import sys

SHM = {"sysv", "posix", "cma", "xpmem", "knem", "self"}
NET = {"tcp", "rc", "rc_verbs", "rc_mlx5", "ud", "ud_verbs", "ud_mlx5", "dc", "dc_mlx5"}


def fail(msg):
    print("check_peers: " + msg, file=sys.stderr)
    sys.exit(1)


def transports(text):
    """UCX lanes as cohort_peer_info gives them: "tl/dev" items, separated by ',' ';' or ' '."""
    names = set()
    for item in text.replace(";", ",").replace(" ", ",").split(","):
        if item:
            names.add(item.split("/")[0])
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--hosts", default=None)
    args = ap.parse_args()
    raw = sys.stdin.read()
    try:
        doc = json.loads(raw)
    except ValueError as e:
        fail("not JSON (%s); it began: %r" % (e, raw[:200]))
    n = args.world
    hosts = args.hosts.split(",") if args.hosts else ["one"] * n
    if len(hosts) != n:
        fail("--hosts names %d ranks, --world is %d" % (len(hosts), n))
    if doc.get("world") != n:
        fail("world is %r, expected %d" % (doc.get("world"), n))
    ranks = doc.get("ranks", [])
    if [r.get("rank") for r in ranks] != list(range(n)):
        fail("ranks are %r, expected 0..%d in order" % ([r.get("rank") for r in ranks], n - 1))
    wire = {"local": [], "remote": []}
    for r in ranks:
        me = r["rank"]
        members = set()
        for g in r["groups"]:
            if me not in g["members"]:
                fail("rank %d reports group %s (%s) without itself" % (me, g["id"], g["kind"]))
            members.update(g["members"])
            size = len(g["members"])
            one_host = len({hosts[m] for m in g["members"]}) == 1
            if "first_allreduce_endpoints" not in g:
                continue
            if size == 1 and g.get("segment") != "none":
                fail("rank %d: one-member group %s has segment %r" % (me, g["kind"], g.get("segment")))
            if (one_host and 2 <= size <= 64 and "COHORT_ALGO_ALLREDUCE" not in os.environ and
                    (g.get("segment") != "ready" or g["first_allreduce_endpoints"] != 0)):
                fail("rank %d: group %s (%d members on one host) took %r, segment %r, %r "
                     "endpoints in its first allreduce: expected its shared segment and none"
                     % (me, g["kind"], size, g.get("algorithm"), g.get("segment"),
                        g["first_allreduce_endpoints"]))
        for p in r["wired_peers"]:
            peer = p["rank"]
            if peer == me:
                fail("rank %d wired itself" % me)
            if peer not in members:
                fail("rank %d wired %d, which is in none of its groups" % (me, peer))
            tls = transports(p["transports"])
            if not tls:
                fail("rank %d: peer %d has no transports" % (me, peer))
            if hosts[peer] == hosts[me]:
                if not tls <= SHM:
                    fail("rank %d -> %d (same host %s): %r is not shared memory only"
                         % (me, peer, hosts[me], p["transports"]))
                wire["local"].append(p["wire_us"])
            else:
                if not tls <= NET:
                    fail("rank %d (%s) -> %d (%s): %r is not a network transport only"
                         % (me, hosts[me], peer, hosts[peer], p["transports"]))
                wire["remote"].append(p["wire_us"])
    s = doc.get("summary", {})
    if s.get("total_groups") != s.get("layout_groups"):
        fail("summary: %r distinct groups, the layout has %r"
             % (s.get("total_groups"), s.get("layout_groups")))
    if args.hosts and len(set(hosts)) > 1 and not wire["remote"]:
        fail("ranks span %d hosts but no rank wired a remote peer" % len(set(hosts)))

    def mean(v):
        return "%.0f us" % (sum(v) / len(v)) if v else "-"

    print("check_peers: ok: %d ranks, %d groups, endpoints %d local (mean wiring %s), "
          "%d remote (mean wiring %s)"
          % (n, s["total_groups"], len(wire["local"]), mean(wire["local"]),
             len(wire["remote"]), mean(wire["remote"])))


if __name__ == "__main__":
    main()
