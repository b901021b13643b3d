/* A rank's published card (address_card.h). */
#include <stdlib.h>
#include <string.h>
#include "core/address_card.h"

void *cohort_card_make(int32_t pid, const cohort_arena_ref_t *arena, const void *addr,
                       size_t addr_len, size_t *len)
{
    uint32_t magic = COHORT_CARD_MAGIC;
    uint8_t *card = malloc(COHORT_CARD_HDR + addr_len);

    if (card == NULL) {
        return NULL;
    }
    memcpy(card, &magic, 4);
    memcpy(card + 4, &pid, 4);
    memcpy(card + 8, &arena->fd, 4);
    memset(card + 12, 0, 4);
    memcpy(card + 16, &arena->token, 8);
    memcpy(card + COHORT_CARD_HDR, addr, addr_len);
    *len = COHORT_CARD_HDR + addr_len;
    return card;
}

cohort_status_t cohort_card_read(const void *card, size_t len, int32_t *pid,
                                 cohort_arena_ref_t *arena, const void **addr)
{
    uint32_t magic;
    int32_t p;

    if (card == NULL || len <= COHORT_CARD_HDR) {
        return COHORT_ERR_MISMATCH;
    }
    memcpy(&magic, card, 4);
    memcpy(&p, (const uint8_t *)card + 4, 4);
    if (magic != COHORT_CARD_MAGIC || p <= 0) {
        return COHORT_ERR_MISMATCH;
    }
    *pid = p;
    memcpy(&arena->fd, (const uint8_t *)card + 8, 4);
    arena->reserved = 0;
    memcpy(&arena->token, (const uint8_t *)card + 16, 8);
    *addr = (const uint8_t *)card + COHORT_CARD_HDR;
    return COHORT_OK;
}
