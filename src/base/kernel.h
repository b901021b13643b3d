/* What the kernel lets this process do with its peers' processes, asked once per process: the
 * answers do not change while it runs, and every context (and each room that needs them: the
 * arena, single copy) would otherwise ask again at init. */
#ifndef COHORT_BASE_KERNEL_H
#define COHORT_BASE_KERNEL_H

/* Whether pidfd_getfd works here (Linux 5.6; a seccomp filter may refuse it), asked of this
 * process itself: 1, else 0 with the errno it failed with in *err (err may be NULL). */
int cohort_kernel_fd_share(int *err);
/* kernel.yama.ptrace_scope: above 0 a process may read or take from its descendants only, not
 * its peers; 0 where Yama is absent. */
int cohort_kernel_ptrace_scope(void);

#endif
