/* cohort_version(): the package version configure was given (configure.ac, AC_INIT). */
#include "config.h"

#include "cohort.h"

const char *cohort_version(void)
{
    return PACKAGE_VERSION;
}
