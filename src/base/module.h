/* Finding a loadable module by its file name: the exchange plugins (core/plugin.c) and the
 * CUDA module (mem/gpu.c) are looked up the same way. It takes the search path and the log
 * settings rather than a context, so that every room may use it. */
#ifndef COHORT_BASE_MODULE_H
#define COHORT_BASE_MODULE_H

#include <stddef.h>
#include "base/log.h"

/* The longest directory tried: as long as a setting may be (COHORT_CONFIG_PATH_MAX; core/plugin.c
 * checks that the two agree). */
#define COHORT_MODULE_DIR_MAX 4096

/* dlopen @a file from each directory of @a search_path (colon-separated, COHORT_PLUGIN_PATH;
 * empty entries are skipped; NULL is empty), then beside libcohort, then the install directory.
 * NULL when none loads, with the paths tried appended to @a tried (each failure at debug level
 * under
 * @a lg). */
void *cohort_module_open(const char *search_path, const cohort_log_cfg_t *lg, const char *file,
                         char *tried, size_t triedlen);

#endif
