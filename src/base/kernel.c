/* What the kernel lets this process do (kernel.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "base/kernel.h"

/* -1 until asked; then the answer (fd share: 1, or -errno). Two threads asking at once both
 * ask the kernel and store the same answer. */
static int kernel_fd_share = -1 - 0x7fff;
static int kernel_scope = -1;

int cohort_kernel_fd_share(int *err)
{
    int known = __atomic_load_n(&kernel_fd_share, __ATOMIC_RELAXED);

    if (known == -1 - 0x7fff) {
        int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0), fd = -1;
        if (pfd >= 0) {
            fd = (int)syscall(SYS_pidfd_getfd, pfd, pfd, 0);
        }
        known = fd >= 0 ? 1 : -errno;
        if (fd >= 0) {
            close(fd);
        }
        if (pfd >= 0) {
            close(pfd);
        }
        __atomic_store_n(&kernel_fd_share, known, __ATOMIC_RELAXED);
    }
    if (known < 0 && err != NULL) {
        *err = -known;
    }
    return known > 0;
}

int cohort_kernel_ptrace_scope(void)
{
    int known = __atomic_load_n(&kernel_scope, __ATOMIC_RELAXED);

    if (known < 0) {
        FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
        known = 0;
        if (f != NULL) {
            if (fscanf(f, "%d", &known) != 1 || known < 0) {
                known = 0;
            }
            fclose(f);
        }
        __atomic_store_n(&kernel_scope, known, __ATOMIC_RELAXED);
    }
    return known;
}
