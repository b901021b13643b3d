#!/bin/sh
# Layering and export rules of DESIGN.md ("Layers and folders") and docs/architecture.md, checked
# on the tree and on the built library. Run from the top of a built tree: scripts/check-layers.sh
#   1. rooms only look down. The rooms of src/, lowest first:
#        base < reduce < mem < core < proto < group < coll < api
#      (pmix_plugins/plugin.h, the exchange's interface, counts as core). A file includes only
#      headers of its own room or lower ones, and a room's objects take symbols only from its own
#      room or lower ones. The upward edges that are still there are listed, each with why, in
#      scripts/layers-known.txt: a new one fails, and so does a listed one that is gone (so the
#      list only shrinks);
#   2. the tools include no internal header, only <cohort.h> and system headers;
#   3. the functions libcohort.so exports are exactly the functions cohort.h declares;
#   4. only pmix_plugins/ includes PMIx headers;
#   5. src/proto includes no CUDA header (device calls go through the GPU module in src/mem).
set -eu
cd "$(dirname "$0")/.."
lib=${COHORT_LIB:-.libs/libcohort.so}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rooms="base reduce mem core proto group coll api"
known=scripts/layers-known.txt

# 1. Rooms only look down: every upward edge, as "include FILE HEADER" or "symbol ROOM SYMBOL".
rank() {
    i=0
    for r in $rooms; do
        [ "$r" = "$1" ] && { echo "$i"; return; }
        i=$((i + 1))
    done
    echo -1
}
for r in $rooms; do
    find "src/$r" -name '*.[ch]' | sort | while read -r f; do
        sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/p' "$f" |
            while read -r h; do
                to=${h%%/*}
                [ "$to" = "$h" ] && continue # cohort.h, config.h, a header beside the file
                [ "$to" = pmix_plugins ] && to=core
                if [ "$(rank "$to")" -gt "$(rank "$r")" ]; then echo "include $f $h"; fi
            done
    done
done >"$tmp/up"
# Symbols: which room defines each global symbol, and which room's objects use it.
for r in $rooms; do
    objs=$(find "src/$r" -name '*.o' ! -path '*/.libs/*')
    [ -n "$objs" ] || { echo "check-layers: no objects in src/$r (build first)"; exit 1; }
    # shellcheck disable=SC2086
    nm --defined-only $objs | awk -v r="$r" 'NF == 3 && $2 ~ /[TDRBC]/ { print $3, r }'
done | sort -u >"$tmp/defs"
for r in $rooms; do
    # shellcheck disable=SC2086
    nm -u $(find "src/$r" -name '*.o' ! -path '*/.libs/*') | awk -v r="$r" 'NF { print $NF, r }'
done | sort -u >"$tmp/uses"
join "$tmp/uses" "$tmp/defs" | while read -r sym user owner; do
    if [ "$(rank "$owner")" -gt "$(rank "$user")" ]; then echo "symbol $user $sym"; fi
done >>"$tmp/up"
sort -u "$tmp/up" -o "$tmp/up"
grep -vE '^[[:space:]]*(#|$)' "$known" | awk '{ print $1, $2, $3 }' | sort -u >"$tmp/known"
comm -23 "$tmp/up" "$tmp/known" >"$tmp/new"
comm -13 "$tmp/up" "$tmp/known" >"$tmp/gone"
if [ -s "$tmp/new" ]; then
    echo "check-layers: a room looks up (order: $rooms; $known lists the known edges):"
    sed 's/^/  /' "$tmp/new"
    fail=1
fi
if [ -s "$tmp/gone" ]; then
    echo "check-layers: $known lists edges that are gone: take them out of it:"
    sed 's/^/  /' "$tmp/gone"
    fail=1
fi

# 5. A protocol calls no CUDA itself.
if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]cuda[a-z_]*\.h' \
    src/proto/*.c src/proto/*.h >"$tmp/proto" 2>/dev/null; then
    echo "check-layers: src/proto includes a CUDA header:"
    sed 's/^/  /' "$tmp/proto"
    fail=1
fi

# 2. The tools use the public API only: any quoted include must be a tool's own header.
# (tools/bench keeps a folder per job: its headers are reached as ../bench.h and the like.)
grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' tools/*.c tools/*.h tools/*/*.c \
    tools/*/*.h tools/*/*/*.c tools/*/*/*.h 2>/dev/null |
    grep -vE '#[[:space:]]*include[[:space:]]*"(\.\./)*(config|bench|sweep|cudart|layout_text)\.h"' \
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
    echo "check-layers: ok ($(wc -l <"$tmp/exported") exported functions = cohort.h; $(wc -l <"$tmp/known") known upward edges)"
fi
exit "$fail"
