#!/bin/sh
# Layering and export rules of DESIGN.md ("Layers and folders"), checked on the tree and on the
# built library. Run from the top of a built tree: scripts/check-layers.sh
#   1. nothing in src/core includes from coll/, group/ or api/;
#   2. the tools include no internal header, only <cohort.h> and system headers;
#   3. the functions libcohort.so exports are exactly the functions cohort.h declares;
#   4. only pmix_plugins/ includes PMIx headers;
#   5. src/mem (GPU module, memory pools, IPC mappings) includes nothing of proto/, coll/, group/
#      or api/: memory sits under the protocols and the layers above.
set -eu
cd "$(dirname "$0")/.."
lib=${COHORT_LIB:-.libs/libcohort.so}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. The engine knows no layer above it.
if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(\.\./)*(coll|group|api)/' \
    src/core/*.c src/core/*.h >"$tmp/core" 2>/dev/null; then
    echo "check-layers: src/core includes from coll/, group/ or api/:"
    sed 's/^/  /' "$tmp/core"
    fail=1
fi

# 5. Memory knows no protocol and no layer above the engine.
if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(\.\./)*(proto|coll|group|api)/' \
    src/mem/*.c src/mem/*.h >"$tmp/mem" 2>/dev/null; then
    echo "check-layers: src/mem includes from proto/, coll/, group/ or api/:"
    sed 's/^/  /' "$tmp/mem"
    fail=1
fi

# 2. The tools use the public API only: any quoted include must be a tool's own header.
grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' tools/*.c tools/*.h tools/*/*.c \
    tools/*/*.h 2>/dev/null |
    grep -vE '#[[:space:]]*include[[:space:]]*"(config\.h|bench\.h|coll_bench\.h|cudart\.h|\.\./layout_text\.h|layout_text\.h)"' \
        >"$tmp/tools" || true
if [ -s "$tmp/tools" ]; then
    echo "check-layers: tools include internal headers (only <cohort.h> is allowed):"
    sed 's/^/  /' "$tmp/tools"
    fail=1
fi

# 3. Exported functions == declared functions.
if [ ! -f "$lib" ]; then
    echo "check-layers: $lib not found (build first, or set COHORT_LIB)"
    exit 1
fi
nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort -u >"$tmp/exported"
# Every declaration in cohort.h starts with COHORT_API and names one function.
sed -n 's/^COHORT_API[^(]*[ *]\(cohort_[A-Za-z0-9_]*\)(.*/\1/p' include/cohort.h | sort -u \
    >"$tmp/declared"
# A function declared without the export macro would be missed above: look for one.
grep -nE '^[a-z_][a-z0-9_ ]*[ *]cohort_[a-z0-9_]+\(' include/cohort.h >"$tmp/unmarked" || true
if [ -s "$tmp/unmarked" ]; then
    echo "check-layers: cohort.h declares functions without COHORT_API:"
    sed 's/^/  /' "$tmp/unmarked"
    fail=1
fi
if ! diff -u "$tmp/declared" "$tmp/exported" >"$tmp/diff"; then
    echo "check-layers: $lib exports (+) / cohort.h declares (-) differ:"
    grep '^[+-][a-z]' "$tmp/diff" | sed 's/^/  /'
    fail=1
fi

# 4. PMIx stays in the plugins.
grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](pmix|pmix_[a-z_]*)\.h[>"]' src tools include tests \
    >"$tmp/pmix" 2>/dev/null || true
if [ -s "$tmp/pmix" ]; then
    echo "check-layers: PMIx headers outside pmix_plugins/:"
    sed 's/^/  /' "$tmp/pmix"
    fail=1
fi

if [ "$fail" = 0 ]; then
    echo "check-layers: ok ($(wc -l <"$tmp/exported") exported functions = cohort.h)"
fi
exit "$fail"
