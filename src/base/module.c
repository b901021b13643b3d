/* Finding a loadable module: see module.h. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "base/module.h"

#ifndef COHORT_PLUGIN_DIR
#define COHORT_PLUGIN_DIR "/usr/local/lib/cohort"
#endif

static void *cohort_module_try(const cohort_log_cfg_t *lg, const char *dir, size_t dirlen,
                               const char *file, char *tried, size_t triedlen)
{
    char path[COHORT_MODULE_DIR_MAX + 64];

    if (dirlen > COHORT_MODULE_DIR_MAX) {
        return NULL;
    }
    size_t used = strlen(tried);
    void *dl;

    snprintf(path, sizeof(path), "%.*s/%s", (int)dirlen, dir, file);
    dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL && used < triedlen) {
        snprintf(tried + used, triedlen - used, "%s%s", used ? ", " : "", path);
        cohort_log(lg, COHORT_LOG_DEBUG, "plugin %s: %s", path, dlerror());
    }
    return dl;
}

void *cohort_module_open(const char *search_path, const cohort_log_cfg_t *lg, const char *file,
                         char *tried, size_t triedlen)
{
    const char *p = search_path != NULL ? search_path : "";
    Dl_info self;
    void *dl = NULL;

    /* The search path first, then beside the library, then the configured install
     * directory. */
    while (dl == NULL && *p != '\0') {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (len > 0) {
            dl = cohort_module_try(lg, p, len, file, tried, triedlen);
        }
        p += len + (colon ? 1 : 0);
    }
    /* Beside libcohort itself (this function is in it): <libdir>/cohort in an installation
     * moved after it was built, and the library's own directory in a build tree (libtool's
     * .libs holds both). */
    if (dl == NULL && dladdr((void *)cohort_module_open, &self) != 0 && self.dli_fname != NULL) {
        const char *slash = strrchr(self.dli_fname, '/');
        if (slash != NULL) {
            size_t len = (size_t)(slash - self.dli_fname);
            char dir[COHORT_MODULE_DIR_MAX];
            snprintf(dir, sizeof(dir), "%.*s/cohort", (int)len, self.dli_fname);
            dl = cohort_module_try(lg, dir, strlen(dir), file, tried, triedlen);
            if (dl == NULL) {
                dl = cohort_module_try(lg, self.dli_fname, len, file, tried, triedlen);
            }
        }
    }
    if (dl == NULL) {
        dl = cohort_module_try(lg, COHORT_PLUGIN_DIR, strlen(COHORT_PLUGIN_DIR), file, tried,
                               triedlen);
    }
    return dl;
}
