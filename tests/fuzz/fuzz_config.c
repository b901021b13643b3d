/* libFuzzer: the COHORT_* settings parser. The input is an environment block, one
 * "NAME=value" a line, each name given the COHORT_ prefix so the parser looks at it. Any
 * input parses or fails with a message; the messages are terminated strings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/config.h"

#define FUZZ_VARS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1), *env[FUZZ_VARS + 1], *vars[FUZZ_VARS], *line, *save = NULL;
    char err[256], warn[256];
    cohort_config_t cfg;
    int n = 0;

    if (copy == NULL) {
        return 0;
    }
    memcpy(copy, data, size);
    copy[size] = '\0';
    for (line = strtok_r(copy, "\n", &save); line != NULL && n < FUZZ_VARS;
         line = strtok_r(NULL, "\n", &save)) {
        size_t len = strlen(line);
        vars[n] = malloc(len + 8);
        if (vars[n] == NULL) {
            break;
        }
        memcpy(vars[n], "COHORT_", 7);
        memcpy(vars[n] + 7, line, len + 1);
        env[n] = vars[n];
        n++;
    }
    env[n] = NULL;
    if (cohort_config_parse(&cfg, env, err, sizeof(err), warn, sizeof(warn)) != COHORT_OK &&
        err[0] == '\0') {
        __builtin_trap(); /* an error always says why */
    }
    if (strlen(err) >= sizeof(err) || strlen(warn) >= sizeof(warn) || cfg.timeout_s < 0 ||
        cfg.keepalive_s < 0 || cfg.watch_s < 0) {
        __builtin_trap();
    }
    for (int i = 0; i < n; i++) {
        free(vars[i]);
    }
    free(copy);
    return 0;
}
