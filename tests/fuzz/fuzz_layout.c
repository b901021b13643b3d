/* libFuzzer: the layout-spec parser. The first two bytes are a world size, the rest the
 * spec. A spec that parses writes itself out as text that parses back to the same text, and
 * every kind it builds has groups that fit in the world. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cohort.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cohort_layout_spec_t *spec = NULL, *again = NULL;
    char err[256], text[512], text2[512], *s;
    int world;

    if (size < 2) {
        return 0;
    }
    world = 1 + ((data[0] | (data[1] << 8)) & 0xfff); /* up to 4096: the checks stay fast */
    s = malloc(size - 1);
    if (s == NULL) {
        return 0;
    }
    memcpy(s, data + 2, size - 2);
    s[size - 2] = '\0';
    if (cohort_layout_spec_parse(s, world, &spec, err, sizeof(err)) != COHORT_OK) {
        if (err[0] == '\0' || spec != NULL) {
            __builtin_trap(); /* a failure always says why, and returns nothing */
        }
        free(s);
        return 0;
    }
    if (cohort_layout_spec_text(spec, text, sizeof(text)) >= (int)sizeof(text) ||
        cohort_layout_spec_parse(text, world, &again, err, sizeof(err)) != COHORT_OK ||
        cohort_layout_spec_text(again, text2, sizeof(text2)) < 0 || strcmp(text, text2) != 0) {
        __builtin_trap();
    }
    for (int k = 0; k < cohort_layout_spec_kind_count(spec); k++) {
        const char *kind = cohort_layout_spec_kind_name(spec, k);
        int ng = cohort_layout_ngroups(spec, kind), gs = cohort_layout_group_size(spec, kind);
        if (ng <= 0 || gs <= 0 || (long)ng * gs > world) {
            __builtin_trap();
        }
    }
    cohort_layout_spec_free(again);
    cohort_layout_spec_free(spec);
    free(s);
    return 0;
}
