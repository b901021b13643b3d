/* Finding and loading the address-exchange plugin named by COHORT_PMIX_PLUGIN, and the search
 * for a module file that the CUDA module's loader (gpu.c) shares. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "core/context.h"
#include "core/log.h"
#include "core/plugin.h"

#ifndef COHORT_PLUGIN_DIR
#define COHORT_PLUGIN_DIR "/usr/local/lib/cohort"
#endif

static void *cohort_plugin_try(cohort_context_t *ctx, const char *dir, size_t dirlen,
                               const char *file, char *tried, size_t triedlen)
{
    char path[COHORT_CONFIG_PATH_MAX + 64];

    if (dirlen > COHORT_CONFIG_PATH_MAX) {
        return NULL;
    }
    size_t used = strlen(tried);
    void *dl;

    snprintf(path, sizeof(path), "%.*s/%s", (int)dirlen, dir, file);
    dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL && used < triedlen) {
        snprintf(tried + used, triedlen - used, "%s%s", used ? ", " : "", path);
        cohort_debug(ctx, "plugin %s: %s", path, dlerror());
    }
    return dl;
}

void *cohort_plugin_open(cohort_context_t *ctx, const char *file, char *tried, size_t triedlen)
{
    const char *p = ctx->cfg.plugin_path;
    Dl_info self;
    void *dl = NULL;

    /* COHORT_PLUGIN_PATH first (colon-separated), then beside the library, then the
     * configured install directory. */
    while (dl == NULL && *p != '\0') {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (len > 0) {
            dl = cohort_plugin_try(ctx, p, len, file, tried, triedlen);
        }
        p += len + (colon ? 1 : 0);
    }
    /* Beside libcohort itself: <libdir>/cohort in an installation moved after it was built,
     * and the library's own directory in a build tree (libtool's .libs holds both). */
    if (dl == NULL && dladdr((void *)cohort_plugin_open, &self) != 0 && self.dli_fname != NULL) {
        const char *slash = strrchr(self.dli_fname, '/');
        if (slash != NULL) {
            size_t len = (size_t)(slash - self.dli_fname);
            char dir[COHORT_CONFIG_PATH_MAX];
            snprintf(dir, sizeof(dir), "%.*s/cohort", (int)len, self.dli_fname);
            dl = cohort_plugin_try(ctx, dir, strlen(dir), file, tried, triedlen);
            if (dl == NULL) {
                dl = cohort_plugin_try(ctx, self.dli_fname, len, file, tried, triedlen);
            }
        }
    }
    if (dl == NULL) {
        dl = cohort_plugin_try(ctx, COHORT_PLUGIN_DIR, strlen(COHORT_PLUGIN_DIR), file, tried,
                               triedlen);
    }
    return dl;
}

cohort_status_t cohort_plugin_load(cohort_context_t *ctx)
{
    const char *name = ctx->cfg.pmix_plugin;
    const cohort_pmix_plugin_t *plugin;
    char tried[COHORT_CONFIG_PATH_MAX * 2] = "";
    char file[COHORT_CONFIG_NAME_MAX + 32];
    void *dl;

    snprintf(file, sizeof(file), "cohort_pmix_%s.so", name);
    dl = cohort_plugin_open(ctx, file, tried, sizeof(tried));
    if (dl == NULL) {
        cohort_error(ctx,
                     "exchange plugin '%s' not found (tried %s); set COHORT_PLUGIN_PATH to the "
                     "directory holding cohort_pmix_%s.so",
                     name, tried, name);
        return COHORT_ERR_UNSUPPORTED;
    }
    plugin = dlsym(dl, COHORT_PMIX_PLUGIN_SYMBOL);
    if (plugin == NULL || plugin->abi != COHORT_PMIX_PLUGIN_ABI ||
        strcmp(plugin->name, name) != 0) {
        cohort_error(ctx, "exchange plugin '%s': %s", name,
                     plugin == NULL ? "no cohort_pmix_plugin symbol"
                                    : "built for another version of cohort");
        dlclose(dl);
        return COHORT_ERR_UNSUPPORTED;
    }
    ctx->plugin = plugin;
    ctx->plugin_dl = dl;
    return COHORT_OK;
}

void cohort_plugin_unload(cohort_context_t *ctx)
{
    if (ctx->plugin_dl != NULL) {
        dlclose(ctx->plugin_dl);
    }
    ctx->plugin = NULL;
    ctx->plugin_dl = NULL;
}
