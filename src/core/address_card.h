/* What a rank publishes through the exchange plugin, once, at init: its process id and its UCX
 * worker address. A peer's pid is then known from PMIx the moment its address is, and a
 * descriptor that names a process for a single copy is checked against it before any byte
 * moves (DESIGN, "Protocols"). */
#ifndef COHORT_CARD_H
#define COHORT_CARD_H

#include <stddef.h>
#include <stdint.h>
#include "cohort.h"

#define COHORT_CARD_MAGIC 0xc0c0ca7du
#define COHORT_CARD_HDR   8 /* magic, pid */

/* The card for @a pid and worker address @a addr, in a malloc'ed buffer (NULL: out of memory). */
void *cohort_card_make(int32_t pid, const void *addr, size_t addr_len, size_t *len);
/* A peer's card: its pid and where its address starts inside @a card. COHORT_ERR_MISMATCH
 * when it is not a card (another cohort's, a stranger's key). */
cohort_status_t cohort_card_read(const void *card, size_t len, int32_t *pid, const void **addr);

#endif
