/* Finding and loading the address-exchange plugin named by COHORT_PMIX_PLUGIN. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "base/module.h"
#include "core/context.h"
#include "core/log.h"
#include "core/plugin.h"

/* The search path is the context's setting; the module search itself is base's, shared with
 * the CUDA module's loader, which may not look into a context. */
_Static_assert(COHORT_CONFIG_PATH_MAX == COHORT_MODULE_DIR_MAX,
               "a directory of COHORT_PLUGIN_PATH must fit the module search's buffers");

cohort_status_t cohort_plugin_load(cohort_context_t *ctx)
{
    const char *name = ctx->cfg.pmix_plugin;
    const cohort_pmix_plugin_t *plugin;
    char tried[COHORT_CONFIG_PATH_MAX * 2] = "";
    char file[COHORT_CONFIG_NAME_MAX + 32];
    void *dl;

    snprintf(file, sizeof(file), "cohort_pmix_%s.so", name);
    dl = cohort_module_open(ctx->cfg.plugin_path, cohort_ctx_log(ctx), file, tried, sizeof(tried));
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
