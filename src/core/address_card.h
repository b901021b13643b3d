/* What a rank publishes through the exchange plugin, once, at init: its process id, where its
 * shared arena is (mem/arena.h: a descriptor number and a token; fd -1 for none) and its UCX
 * worker address. A peer's pid is then known from PMIx the moment its address is, and a
 * descriptor that names a process for a single copy is checked against it before any byte
 * moves (DESIGN, "Protocols"). */
#ifndef COHORT_CARD_H
#define COHORT_CARD_H

#include <stddef.h>
#include <stdint.h>
#include "cohort.h"
#include "mem/arena.h"

/* The magic changes with the layout: a card of another version is refused, not misread. */
#define COHORT_CARD_MAGIC 0xc0c0ca7eu
#define COHORT_CARD_HDR   24 /* magic, pid, arena fd, 4 reserved, arena token */

/* The card for @a pid, its @a arena and worker address @a addr, in a malloc'ed buffer (NULL: out
 * of memory). */
void *cohort_card_make(int32_t pid, const cohort_arena_ref_t *arena, const void *addr,
                       size_t addr_len, size_t *len);
/* A peer's card: its pid, its arena and where its address starts inside @a card.
 * COHORT_ERR_MISMATCH when it is not a card (another cohort's, a stranger's key). */
cohort_status_t cohort_card_read(const void *card, size_t len, int32_t *pid,
                                 cohort_arena_ref_t *arena, const void **addr);

#endif
