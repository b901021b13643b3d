/* Ids whose messages are dropped on arrival (poison.h). */
#include <string.h>
#include "base/poison.h"

void cohort_poison_init(cohort_poison_t *p)
{
    memset(p, 0, sizeof(*p));
    cohort_map_init(&p->marks);
}

void cohort_poison_cleanup(cohort_poison_t *p)
{
    cohort_map_cleanup(&p->marks);
}

cohort_poison_mark_t cohort_poison_get(const cohort_poison_t *p, uint64_t id)
{
    return (cohort_poison_mark_t)(uintptr_t)cohort_map_get(&p->marks, id);
}

static void cohort_poison_mark(cohort_poison_t *p, uint64_t id, cohort_poison_mark_t mark)
{
    /* Out of memory, the id goes unmarked: its late messages are kept as orphans, within
     * COHORT_ORPHAN_LIMIT, which is what an unmarked id gets anyway. */
    (void)cohort_map_put(&p->marks, id, (void *)(uintptr_t)mark);
}

void cohort_poison_freed(cohort_poison_t *p, uint64_t id)
{
    uint64_t oldest = p->freed[p->next];

    /* Ids are never reused (group_id.c numbers each creation), so a freed id keeps its mark
     * until it leaves the ring; checked all the same, a lost message's mark is never dropped. */
    if (oldest != 0 && cohort_poison_get(p, oldest) == COHORT_POISON_FREED) {
        cohort_map_del(&p->marks, oldest);
    }
    p->freed[p->next] = id;
    p->next = (p->next + 1) % COHORT_POISON_FREED_KEEP;
    cohort_poison_mark(p, id, COHORT_POISON_FREED);
}

void cohort_poison_dropped(cohort_poison_t *p, uint64_t id)
{
    cohort_poison_mark(p, id, COHORT_POISON_DROPPED);
}

cohort_poison_mark_t cohort_poison_take(cohort_poison_t *p, uint64_t id)
{
    cohort_poison_mark_t mark = cohort_poison_get(p, id);

    if (mark == COHORT_POISON_DROPPED) {
        cohort_map_del(&p->marks, id);
    }
    return mark;
}

size_t cohort_poison_count(const cohort_poison_t *p)
{
    return p->marks.count;
}
