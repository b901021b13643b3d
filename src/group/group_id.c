#include <string.h>
#include "group/group_id.h"

/* splitmix64's finalizer: full avalanche, so ids of neighbouring instances look unrelated. */
static uint64_t cohort_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* FNV-1a over bytes, with integers fed little-endian so every platform derives the same ids. */
static uint64_t cohort_fnv_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t cohort_fnv_u32(uint64_t h, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};

    return cohort_fnv_bytes(h, b, sizeof(b));
}

uint64_t cohort_group_key(const char *tag, const int *world_ranks, int nranks)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    /* The tag's length goes first, so ("ab", [..]) and ("a", "b"-like member bytes) differ. */
    h = cohort_fnv_u32(h, (uint32_t)strlen(tag));
    h = cohort_fnv_bytes(h, tag, strlen(tag));
    h = cohort_fnv_u32(h, (uint32_t)nranks);
    for (int i = 0; i < nranks; i++) {
        h = cohort_fnv_u32(h, (uint32_t)(world_ranks != NULL ? world_ranks[i] : i));
    }
    h = cohort_mix64(h);
    return h != 0 ? h : 1;
}

uint64_t cohort_group_id_derive(uint64_t key, uint64_t instance)
{
    uint64_t id = cohort_mix64(key ^ cohort_mix64(instance + 0x9e3779b97f4a7c15ULL));

    return id != 0 ? id : 1;
}
