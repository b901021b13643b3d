/* Intrusive doubly linked list with a sentinel head. */
#ifndef COHORT_LIST_H
#define COHORT_LIST_H

#include <stddef.h>

typedef struct cohort_list {
    struct cohort_list *prev, *next;
} cohort_list_t;

#define cohort_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static inline void cohort_list_init(cohort_list_t *head)
{
    head->prev = head->next = head;
}

static inline int cohort_list_empty(const cohort_list_t *head)
{
    return head->next == head;
}

static inline void cohort_list_push(cohort_list_t *head, cohort_list_t *elem)
{
    elem->prev = head->prev;
    elem->next = head;
    head->prev->next = elem;
    head->prev = elem;
}

static inline void cohort_list_del(cohort_list_t *elem)
{
    elem->prev->next = elem->next;
    elem->next->prev = elem->prev;
    elem->prev = elem->next = elem;
}

/* Move every element of @a from to the end of @a to; @a from ends empty. */
static inline void cohort_list_splice(cohort_list_t *from, cohort_list_t *to)
{
    if (cohort_list_empty(from)) {
        return;
    }
    from->next->prev = to->prev;
    to->prev->next = from->next;
    from->prev->next = to;
    to->prev = from->prev;
    cohort_list_init(from);
}

/* Safe against deleting the current element. */
#define cohort_list_for_each(pos, tmp, head)                                                       \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);                               \
         (pos) = (tmp), (tmp) = (pos)->next)

#endif
