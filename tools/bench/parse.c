/*
 * Option values as every mode reads them: whole numbers within a range, and byte sizes with
 * binary multiples. A value that is not one is refused whole, never read in part (atoi's
 * "12x" is not 12).
 */
#include <errno.h>
#include <stdlib.h>
#include "bench.h"

int bench_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        return -1;
    }
    *out = v;
    return 0;
}

/* The multiple a size's suffix names (K, M, G, either case), the suffix passed over. */
static unsigned long long bench_parse_unit(char **end)
{
    static const char units[] = "kmg";

    for (int i = 0; units[i] != '\0'; i++) {
        if (**end == units[i] || **end == units[i] - 'a' + 'A') {
            (*end)++;
            return 1ULL << (10 * (i + 1));
        }
    }
    return 1;
}

int bench_parse_size(const char *s, size_t max, size_t *out)
{
    unsigned long long v, mult;
    char *end;

    if (s[0] < '0' || s[0] > '9') {
        return -1;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0) {
        return -1;
    }
    mult = bench_parse_unit(&end);
    if (mult > 1 && *end == 'i') {
        end++;
    }
    if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0' || v > max / mult) {
        return -1;
    }
    *out = (size_t)(v * mult);
    return 0;
}
