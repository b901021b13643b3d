#!/bin/sh
# cohort_bench --json (docs/bench.md): two collective sweeps at 2 ranks write their results as
# JSON, and python3 holds the file to the sweep that was asked for (a row per size, every size)
# and to itself (busbw_frac_memcpy = busbw / the memcpy bound, ratio = MPI time / cohort time);
# a --json file that cannot be opened is exit status 2 with a message, before any benchmarking.
# A --tail run (every call timed) holds its statistics to order (p50 <= p99 <= p99.9 <= max),
# its counts to the calls timed and those to -n, and its CSV columns to its JSON. And
# `cohort_bench algorithms` lists CUDA IPC's row for every collective but barrier.
# Run by make check (through tests/mpi/launch.sh, which bounds it); SKIP (77) without mpirun or
# python3.
set -u
build=$(pwd)
bench=$build/tools/cohort_bench
mpirun=${MPIRUN:-mpirun}
py=${PYTHON:-python3}
limit=${TEST_TIMEOUT:-120}
command -v "$mpirun" >/dev/null 2>&1 || { echo "bench_json: SKIP: no $mpirun"; exit 77; }
command -v "$py" >/dev/null 2>&1 || { echo "bench_json: SKIP: no $py"; exit 77; }
[ -x "$bench" ] || { echo "bench_json: FAIL: $bench not built"; exit 1; }
: "${COHORT_PLUGIN_PATH:=$build/.libs}"
export COHORT_PLUGIN_PATH
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() {
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" "$mpirun" $root --oversubscribe --bind-to none -x COHORT_PLUGIN_PATH \
        -np 2 "$bench" "$@" </dev/null
}

fail=0
for coll in allreduce allgather; do
    echo "== bench_json: $coll"
    rc=0
    run "$coll" -b 8 -e 4K -f 8 -n 5 --check --json "$tmp/$coll.json" >"$tmp/$coll.txt" 2>&1 ||
        rc=$?
    cat "$tmp/$coll.txt"
    if [ "$rc" != 0 ]; then
        echo "bench_json: FAIL: cohort_bench $coll: exit status $rc"
        fail=1
        continue
    fi
    "$py" - "$tmp/$coll.json" "$coll" "$tmp/$coll.txt" <<'EOF' || fail=1
import json, re, sys

path, coll, text = sys.argv[1:4]


def refuse(constant):
    # Python's json takes NaN and Infinity, which JSON does not have.
    raise ValueError("not JSON: " + constant)


with open(path) as f:
    d = json.load(f, parse_constant=refuse)


def close(a, b, rel=1e-4):
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-12


# The sizes the sweep asks for: 8 B x 8 up to 4 KiB, in whole float32 elements (and for
# allgather whole elements per rank), as cohort_bench rounds them.
per = 4 * (d["world_size"] if coll == "allgather" else 1)
want, req = [], 8
while True:
    size = max(req // per, 1) * per
    if size not in want:
        want.append(size)
    if req > 4096 // 8:
        break
    req *= 8
assert d["collective"] == coll, d["collective"]
assert d["world_size"] == 2, d["world_size"]
assert d["completed"] is True
assert d["dtype"] == "float32" and d["mem"] == "host", (d["dtype"], d["mem"])
assert d["check"] is True
assert "tail" not in d, "a run without --tail says tail"
for key in ("cohort_version", "progress", "exchange_plugin", "memcpy_bound_method"):
    assert isinstance(d[key], str) and d[key], key
assert isinstance(d["command"], list) and d["command"][:2] == ["cohort_bench", coll]
bound = d["memcpy_bound_gbs"]
assert isinstance(bound, (int, float)) and bound > 0, bound
# The table on stdout says the same bound, and has the column.
with open(text) as f:
    out = f.read()
m = re.search(r"^# memcpy bound: ([0-9.]+) GB/s \(", out, re.M)
assert m and abs(float(m.group(1)) - bound) <= 0.006, (m and m.group(1), bound)
assert re.search(r"^#.* busbw/memcpy( |$)", out, re.M), "no busbw/memcpy column"
rows = d["rows"]
assert len(rows) == len(want), (len(rows), want)
assert [r["size"] for r in rows] == want, ([r["size"] for r in rows], want)
mpi = d["mpi_library"] is not None
for r in rows:
    assert r["count"] == r["size"] // 4, r
    assert r["type"] == "float32", r
    assert r["redop"] == ("sum" if coll == "allreduce" else "none"), r
    assert r["time_us"] > 0, r
    assert close(r["algbw_gbs"], r["size"] / 1e3 / r["time_us"]), r
    assert r["busbw_gbs"] > 0, r
    assert close(r["busbw_frac_memcpy"], r["busbw_gbs"] / bound), (r, bound)
    assert "tail" not in r, r
    if mpi:
        assert r["mpi_time_us"] > 0, r
        assert close(r["ratio"], r["mpi_time_us"] / r["time_us"]), r
        assert r["mpi_note"] is None, r
    else:
        assert r["mpi_time_us"] is None and r["ratio"] is None, r
print("bench_json: %s: %d rows, memcpy bound %.2f GB/s, MPI %s" %
      (coll, len(rows), bound, "ran" if mpi else "absent"))
EOF
done

echo "== bench_json: --tail (every call timed; CSV and JSON of one run)"
rc=0
# 200 calls in 3 blocks: six segments of 33 or 34, so the per-call times of uneven segments
# must add up to -n.
run allreduce -b 8 -e 4K -f 8 -n 200 --blocks 3 --tail --csv --json "$tmp/tail.json" \
    >"$tmp/tail.csv" 2>&1 || rc=$?
cat "$tmp/tail.csv"
if [ "$rc" != 0 ]; then
    echo "bench_json: FAIL: --tail: exit status $rc"
    fail=1
else
    "$py" - "$tmp/tail.json" "$tmp/tail.csv" 200 <<'EOF' || fail=1
import json, sys

path, csv_path, iters = sys.argv[1], sys.argv[2], int(sys.argv[3])


def refuse(constant):
    raise ValueError("not JSON: " + constant)


with open(path) as f:
    d = json.load(f, parse_constant=refuse)
stats = ["p50_us", "p99_us", "p999_us", "max_us", "over_1ms", "over_250us", "calls"]
mpi = d["mpi_library"] is not None
assert d["iters"] == iters, d["iters"]
assert isinstance(d.get("tail"), str) and d["tail"], d.get("tail")
assert d["completed"] is True and len(d["rows"]) == 4, (d["completed"], len(d["rows"]))


def check(t, where):
    assert isinstance(t, dict) and sorted(t) == sorted(stats), (where, t)
    for k in stats[:4]:
        assert isinstance(t[k], (int, float)) and t[k] > 0, (where, k, t)
    assert t["p50_us"] <= t["p99_us"] <= t["p999_us"] <= t["max_us"], (where, t)
    for k in stats[4:]:
        assert isinstance(t[k], int) and not isinstance(t[k], bool), (where, k, t)
    assert 0 <= t["over_1ms"] <= t["over_250us"] <= t["calls"], (where, t)
    assert t["calls"] == iters, (where, t["calls"], iters)
    # A count above a threshold is nonzero exactly when the max is above it (the max and the
    # count are the largest over ranks, both from the rank with the slowest call).
    for k, limit in (("over_1ms", 1000), ("over_250us", 250)):
        if abs(t["max_us"] - limit) > 0.01:
            assert (t[k] > 0) == (t["max_us"] > limit), (where, k, t)


for r in d["rows"]:
    tail = r["tail"]
    assert sorted(tail) == ["cohort", "mpi"], r
    check(tail["cohort"], (r["size"], "cohort"))
    if mpi:
        check(tail["mpi"], (r["size"], "mpi"))
    else:
        assert tail["mpi"] is None, r

# The CSV of the same run: the columns before the tail's keep their places (scripts read fields
# 8 and 12), and the tail's, appended, say what the JSON says.
with open(csv_path) as f:
    lines = [l for l in f.read().splitlines() if l and not l.startswith("#")]
head = lines[0].split(",")
base = ["size", "count", "type", "redop", "root", "time_us", "algbw_gbs", "busbw_gbs"]
if mpi:
    base += ["mpi_time_us", "mpi_algbw_gbs", "mpi_busbw_gbs", "ratio", "mpi_note"]
base += ["busbw_frac_memcpy"]
libs = [("cohort", "tail_")] + ([("mpi", "mpi_tail_")] if mpi else [])
assert head == base + [p + s for _, p in libs for s in stats], head
assert len(lines) == 1 + len(d["rows"]), len(lines)
for line, r in zip(lines[1:], d["rows"]):
    f = dict(zip(head, line.split(",")))
    assert len(line.split(",")) == len(head), line
    assert int(f["size"]) == r["size"], (line, r["size"])
    for lib, prefix in libs:
        for s in stats:
            a, b = float(f[prefix + s]), r["tail"][lib][s]
            assert abs(a - b) <= 1e-3 + 1e-5 * abs(b), (prefix + s, a, b)
print("bench_json: --tail: %d rows, %d calls timed per library and size, MPI %s" %
      (len(d["rows"]), iters, "ran" if mpi else "absent"))
EOF
fi

echo "== bench_json: --json - (stdout carries the JSON alone)"
rc=0
run barrier -n 3 --json - >"$tmp/stdout.json" 2>"$tmp/stderr.txt" || rc=$?
cat "$tmp/stderr.txt"
if [ "$rc" != 0 ]; then
    echo "bench_json: FAIL: --json -: exit status $rc"
    fail=1
elif ! "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["collective"] == "barrier" and len(d["rows"]) == 1, d
assert d["rows"][0]["busbw_frac_memcpy"] is None, d["rows"][0]
' "$tmp/stdout.json"; then
    echo "bench_json: FAIL: --json -: stdout is not the JSON alone:"
    cat "$tmp/stdout.json"
    fail=1
fi

echo "== bench_json: --json into a folder that does not exist"
rc=0
run allreduce -b 8 -e 8 --json /nonexistent/dir/x >"$tmp/bad.txt" 2>&1 || rc=$?
cat "$tmp/bad.txt"
if [ "$rc" != 2 ]; then
    echo "bench_json: FAIL: --json /nonexistent/dir/x: exit status $rc, expected 2"
    fail=1
elif ! grep -q -- '--json /nonexistent/dir/x: cannot open' "$tmp/bad.txt"; then
    echo "bench_json: FAIL: --json /nonexistent/dir/x: no message naming the file"
    fail=1
elif grep -q '^# memcpy bound' "$tmp/bad.txt"; then
    echo "bench_json: FAIL: --json /nonexistent/dir/x: benchmarked before failing"
    fail=1
fi
# The algorithm table lists CUDA IPC as a row of every collective it serves, so that
# COHORT_ALGO_<COLL>=cuda_ipc names it like any other (no launch: the table is static).
"$bench" algorithms >"$tmp/algos.txt" 2>&1 || fail=1
for coll in bcast reduce allreduce allgather reduce_scatter alltoall; do
    if ! grep -Eq "^[0-9]+ +$coll +cuda_ipc " "$tmp/algos.txt"; then
        echo "bench_json: FAIL: cohort_bench algorithms lists no cuda_ipc row for $coll"
        fail=1
    fi
done
[ "$fail" = 0 ] && echo "bench_json: passed"
exit "$fail"
