#!/bin/sh
# Layering and export rules of DESIGN.md ("Layers and folders"), checked on the tree and on the
# built library. Run from the top of a built tree: scripts/check-layers.sh
#   1. nothing in src/core includes from coll/, group/ or api/;
#   2. the tools include no internal header, only <cohort.h> and system headers;
#   3. the functions libcohort.so exports are exactly the functions cohort.h declares;
#   4. only pmix_plugins/ includes PMIx headers;
#   5. src/mem (GPU module, memory pools, IPC mappings) includes nothing of proto/, coll/, group/
#      or api/: memory sits under the protocols and the layers above.
#   6. src/proto (one file per protocol behind one table) includes nothing of coll/, group/ or
#      api/ and no CUDA header (device calls go through the GPU module in src/mem);
#   7. the engine reaches the protocols through the table only: src/core includes no header of
#      src/proto but proto.h (the table's calls) and state.h (a transfer's protocol state), and
#      the symbols src/core's objects take from src/proto's are the table's calls alone
#      (cohort_proto_<verb>), never a protocol by name.
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

# 6. A protocol knows no layer above the engine and no CUDA.
if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]((\.\./)*(coll|group|api)/|cuda[a-z_]*\.h)' \
    src/proto/*.c src/proto/*.h >"$tmp/proto" 2>/dev/null; then
    echo "check-layers: src/proto includes from coll/, group/, api/ or CUDA:"
    sed 's/^/  /' "$tmp/proto"
    fail=1
fi

# 7. The engine calls protocols through the table: headers...
grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(\.\./)*proto/' src/core/*.c src/core/*.h |
    grep -vE '"(\.\./)*proto/(proto|state)\.h"' >"$tmp/core_proto" || true
if [ -s "$tmp/core_proto" ]; then
    echo "check-layers: src/core includes a protocol's header (only proto/proto.h, proto/state.h):"
    sed 's/^/  /' "$tmp/core_proto"
    fail=1
fi
# ...and symbols, in the built objects (libtool's PIC ones where there are).
core_o=$(ls src/core/.libs/*.o 2>/dev/null || ls src/core/*.o 2>/dev/null || true)
proto_o=$(ls src/proto/.libs/*.o 2>/dev/null || ls src/proto/*.o 2>/dev/null || true)
if [ -n "$core_o" ] && [ -n "$proto_o" ]; then
    nm --defined-only $proto_o | awk 'NF == 3 && $2 ~ /[TDRB]/ { print $3 }' | sort -u \
        >"$tmp/proto_defs"
    nm -u $core_o | awk '{ print $NF }' | sort -u >"$tmp/core_undef"
    comm -12 "$tmp/proto_defs" "$tmp/core_undef" |
        grep -vE '^cohort_proto_(init|cleanup|claim|start|progress|sent|cancel|finish|payload|describe)$' \
            >"$tmp/core_calls" || true
    if [ -s "$tmp/core_calls" ]; then
        echo "check-layers: src/core names a protocol (not through src/proto/proto.h's table):"
        sed 's/^/  /' "$tmp/core_calls"
        fail=1
    fi
else
    echo "check-layers: no objects in src/core or src/proto (build first)"
    exit 1
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
