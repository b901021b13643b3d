/*
 * The k-nomial tree of bcast_knomial and reduce_knomial: in virtual ranks vr = (rank - root)
 * mod n, a rank's parent clears its lowest nonzero base-radix digit; its children add one
 * digit below that, at distances d, 2d, .. (radix - 1)d for every d = radix^i below its own.
 */
#ifndef COHORT_COLL_PATTERN_KNOMIAL_H
#define COHORT_COLL_PATTERN_KNOMIAL_H

/* The most children any rank of an n-rank tree has: (radix - 1) per level. */
static inline int cohort_knomial_max_children(int n, int radix)
{
    int levels = 0;

    for (long d = 1; d < n; d *= radix) {
        levels++;
    }
    return (radix - 1) * levels;
}

/* Parent (-1 at the root) and children, nearest first, as comm ranks. children holds
 * cohort_knomial_max_children(n, radix) entries. */
static inline void cohort_knomial_tree(int n, int rank, int root, int radix, int *parent,
                                       int *children, int *nchildren)
{
    int vr = (rank - root + n) % n;

    *parent = -1;
    *nchildren = 0;
    for (long d = 1; d < n; d *= radix) {
        if (vr % (d * radix) != 0) {
            *parent = (int)((vr - vr % (d * radix) + root) % n);
            return;
        }
        for (int i = 1; i < radix && vr + i * d < n; i++) {
            children[(*nchildren)++] = (int)((vr + i * d + root) % n);
        }
    }
}

#endif
