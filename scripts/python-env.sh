#!/bin/sh
# Makes (once) the virtual environment the Python tests run in and prints its python's path:
#   venv_python=$(scripts/python-env.sh)
# From /usr/bin/python3 (python3 -m venv; Debian: python3-venv), with exactly the pins of
# python/requirements-test.txt (torch from PyPI and its dependencies) and
# python/requirements-megatron.txt (megatron-core, installed without its Python version gate:
# that file says why), in /var/cache/cohort-py/<hash of both files and the python's version>
# (COHORT_PY_CACHE for another directory). A change of a file or of the python makes a new one;
# an unchanged one is reused in a second. Never installs into the system Python.
#
# Atomic: pip installs into <dir>.tmp.<pid>, which is renamed into place only once complete (a
# half-made environment is never used; venv's own paths are fixed for the final name first), and
# a lock (flock) lets two copies of the suite share the work instead of racing. Progress and pip's
# output go to stderr, the path alone to stdout.
#   scripts/python-env.sh --cached   prints the path only if the environment is made already
#                                    (exit 1 otherwise, nothing done): scripts/test.sh then
#                                    builds the torch extension in its first make.
set -eu
cached_only=0
[ "${1:-}" != --cached ] || cached_only=1
root=$(cd "$(dirname "$0")/.." && pwd)
req=$root/python/requirements-test.txt
req_mc=$root/python/requirements-megatron.txt
base=/usr/bin/python3
cache=${COHORT_PY_CACHE:-/var/cache/cohort-py}
for f in "$req" "$req_mc"; do
    [ -f "$f" ] || { echo "python-env: $f is missing" >&2; exit 1; }
done
[ -x "$base" ] || { echo "python-env: $base is missing (apt-get install python3)" >&2; exit 1; }
ver=$("$base" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
hash=$({ cat "$req" "$req_mc"; echo "python $ver"; } | sha256sum | cut -c1-16)
dir=$cache/$hash
if [ -x "$dir/bin/python" ]; then
    echo "$dir/bin/python"
    exit 0
fi
[ $cached_only = 0 ] || exit 1
mkdir -p "$cache"
exec 9>"$cache/.lock"
echo "python-env: waiting for the lock on $cache/.lock" >&2
flock 9
# Made by another copy of this script while this one waited.
if [ -x "$dir/bin/python" ]; then
    echo "$dir/bin/python"
    exit 0
fi
"$base" -c 'import ensurepip' 2>/dev/null ||
    { echo "python-env: $base has no venv/ensurepip (apt-get install python3-venv)" >&2; exit 1; }
tmp=$dir.tmp.$$
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
echo "python-env: making $dir from $req (python $ver)" >&2
"$base" -m venv "$tmp" >&2
# Every pure-Python dependency is pinned in the file; torch pins its CUDA wheels (nvidia-*,
# triton) itself, exactly. pip check then says if anything installed disagrees.
"$tmp/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir \
    -r "$req" >&2
"$tmp/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir \
    --no-deps --ignore-requires-python -r "$req_mc" >&2
"$tmp/bin/python" -m pip check >&2
cat "$req" "$req_mc" > "$tmp/requirements.txt"
# venv writes its own path into its scripts and pyvenv.cfg: give them the final one.
grep -rlI -- "$tmp" "$tmp/bin" "$tmp/pyvenv.cfg" | while read -r f; do
    sed -i "s|$tmp|$dir|g" "$f"
done
mv "$tmp" "$dir"
trap - EXIT
echo "python-env: $dir made in $(($(date +%s) - t0)) s" >&2
echo "$dir/bin/python"
