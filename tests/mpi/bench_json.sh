#!/bin/sh
# cohort_bench --json (docs/bench.md): two collective sweeps at 2 ranks write their results as
# JSON, and python3 holds the file to the sweep that was asked for (a row per size, every size)
# and to itself (busbw_frac_memcpy = busbw / the memcpy bound, ratio = MPI time / cohort time);
# a --json file that cannot be opened is exit status 2 with a message, before any benchmarking.
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
[ "$fail" = 0 ] && echo "bench_json: passed"
exit "$fail"
