#!/bin/sh
# The shape of src/ that issue 35 measures, before and after a change. Run from the top of a
# built tree: scripts/src-shape.sh. It prints:
#   1. the strongly connected sets of files: circles of files that reach each other through
#      the symbols their objects use, so that none of them can be read, tested or changed apart
#      from the others;
#   2. the sizes of the engine's blocks every operation carries (a transfer, a request, the
#      context), compiled here against the tree's headers;
#   3. lines per room (src/<room>, .c and .h).
#
# For 1, a file uses another when its object takes a global symbol the other's object defines (nm).
# Two graphs are printed, since a table hides a call behind data: "calls" counts only
# functions (nm type T); "calls and tables" counts data too (D, R, B, C: a row of the protocol
# table, an ops struct), so a file that names a table reaches the functions in it. Each set is
# one line, its size first, largest first; files in no circle are not printed. A header's
# static inline functions are not seen (they compile into their callers), nor are includes.
#
# scripts/src-shape.sh --edges also prints, under each circle, every edge inside it: which file
# uses which symbols of which other file (one line per pair of files), so that the edges that
# close a circle can be found and cut. Only the edges between two files of one circle are
# printed; an edge from a circle to a file outside it is not part of the circle.
set -eu
edges=0
[ "${1:-}" = --edges ] && edges=1
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "object file" -> source name: src/core/libcohort_all_la-am.o is src/core/am.c.
find src -name '*.o' ! -path '*/.libs/*' | sort | while read -r o; do
    d=$(dirname "$o")
    b=$(basename "$o" .o)
    echo "$o $d/${b#*-}.c"
done >"$tmp/objs"
[ -s "$tmp/objs" ] || { echo "src-shape: no objects under src/ (build first)"; exit 1; }
while read -r o f; do
    nm --defined-only "$o" | awk -v f="$f" 'NF == 3 && $2 ~ /[TDRBC]/ { print $3, $2, f }'
    nm -u "$o" | awk -v f="$f" 'NF { print $NF, f }' >>"$tmp/uses"
done <"$tmp/objs" >"$tmp/defs"

python3 - "$tmp/defs" "$tmp/uses" "$edges" <<'EOF'
import sys
from collections import defaultdict

defs = {}
for line in open(sys.argv[1]):
    sym, kind, f = line.split()
    defs[sym] = (kind, f)
uses = [line.split() for line in open(sys.argv[2])]
show_edges = sys.argv[3] == "1"


def circles(with_tables):
    graph = defaultdict(set)
    used = defaultdict(set)  # (user, owner) -> the symbols that make the edge
    for sym, f in uses:
        if sym not in defs:
            continue
        kind, owner = defs[sym]
        if owner != f and (with_tables or kind == "T"):
            graph[f].add(owner)
            used[(f, owner)].add(sym)
    # Tarjan's strongly connected components, iterative (no recursion limit to meet).
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    for root in sorted(set(graph) | {g for s in graph.values() for g in s}):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = n
        n += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = n
                n += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(graph[w]))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return sorted(out, key=lambda c: (-len(c), c)), used


for title, with_tables in (("calls", False), ("calls and tables", True)):
    sets, used = circles(with_tables)
    print("%s: %d circle(s), largest %d files" % (title, len(sets), len(sets[0]) if sets else 0))
    for c in sets:
        print("  %2d  %s" % (len(c), " ".join(p[len("src/"):] for p in c)))
        if not show_edges:
            continue
        for a in c:
            for b in c:
                if (a, b) in used:
                    print("        %s -> %s: %s" % (a[len("src/"):], b[len("src/"):],
                                                  " ".join(sorted(used[(a, b)]))))
EOF

# 2. Sizes, as the compiler lays them out for this tree.
cat >"$tmp/sizes.c" <<'EOF'
#include <stdio.h>
#include "core/context.h"
#include "core/request.h"
int main(void)
{
    printf("sizes: cohort_xfer_t %zu, cohort_request_t %zu (its point-to-point transfer "
           "included), cohort_context_t %zu; ring allreduce's 32 transfers %zu bytes\n",
           sizeof(cohort_xfer_t), sizeof(cohort_request_t), sizeof(cohort_context_t),
           32 * sizeof(cohort_xfer_t));
    return 0;
}
EOF
${CC:-cc} -std=gnu11 -I. -Iinclude -Isrc "$tmp/sizes.c" -o "$tmp/sizes"
"$tmp/sizes"

# 3. Lines per room.
printf 'lines:'
for d in src/*/; do
    r=$(basename "$d")
    printf ' %s %s' "$r" "$(find "src/$r" -name '*.[ch]' -exec cat {} + | wc -l)"
done
echo
