#!/usr/bin/python3
"""Checks the group plugin's debug log (COHORT_LOG=debug, every rank's stderr) read from stdin.

  check_group_ids.py --world N [--min-groups G]

From the lines the plugin writes,
  cohort[R] debug: PMIx_Group_construct(NAME): context id ID      (or "none": see group.c)
  cohort[R] debug: PMIx_Group_destruct(NAME): done
checks that every rank that got a context id for a group agrees on it, that no two groups
share one, that every construct has its destruct on the same rank, that every rank constructed
something, and that there were at least G groups. Prints one summary line; exits 1 on the first
failed check, naming it.
"""
import argparse
import re
import sys

CONSTRUCT = re.compile(
    r"cohort\[(\d+)\] debug: PMIx_Group_construct\(([^)]+)\): context id (\d+|none)")
DESTRUCT = re.compile(r"cohort\[(\d+)\] debug: PMIx_Group_destruct\(([^)]+)\): done")


def fail(msg):
    print("check_group_ids: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--min-groups", type=int, default=1)
    args = ap.parse_args()

    ids = {}  # group name -> context id
    built = set()  # (rank, name)
    gone = set()
    without = 0  # constructs that succeeded with no context id
    for line in sys.stdin:
        m = CONSTRUCT.search(line)
        if m:
            rank, name = int(m.group(1)), m.group(2)
            if m.group(3) == "none":
                without += 1
            else:
                cid = int(m.group(3))
                if ids.setdefault(name, cid) != cid:
                    fail(f"group {name}: rank {rank} got context id {cid}, another member "
                         f"{ids[name]}")
            if (rank, name) in built:
                fail(f"rank {rank} constructed {name} twice")
            built.add((rank, name))
            continue
        m = DESTRUCT.search(line)
        if m:
            gone.add((int(m.group(1)), m.group(2)))
    by_id = {}
    for name, cid in ids.items():
        if cid in by_id:
            fail(f"groups {by_id[cid]} and {name} share context id {cid}")
        by_id[cid] = name
    names = {n for _, n in built}
    if len(names) < args.min_groups:
        fail(f"{len(names)} groups constructed, expected at least {args.min_groups}")
    missing = sorted(built - gone)
    if missing:
        fail(f"constructed but never destructed (rank, group): {missing[:5]}")
    ranks = {r for r, _ in built}
    if ranks != set(range(args.world)):
        fail(f"ranks that constructed groups: {sorted(ranks)}, expected 0..{args.world - 1}")
    print(f"check_group_ids: {len(names)} groups, {len(built)} constructs and destructs over "
          f"{args.world} ranks, context ids distinct and agreed"
          + (f" ({without} constructs without one)" if without else ""))


if __name__ == "__main__":
    main()
