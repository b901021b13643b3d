/*
 * cohort_bench <collective>, the MPI side: the same call through MPI on MPI_COMM_WORLD, which
 * cases MPI cannot run, and what the header says of the MPI library (built with MPI only,
 * BENCH_WITH_MPI; without it the questions answer "absent").
 */
#include "sweep.h"

#ifdef BENCH_WITH_MPI
/* MPI_DATATYPE_NULL where MPI has no such type. A bcast, allgather or alltoall only moves
 * bytes, so a 16-bit float travels as MPI_UINT16_T; reducing one has no MPI equivalent. */
static MPI_Datatype bench_mpi_type(const bench_t *b)
{
    switch (b->dt->dt) {
    case COHORT_INT8:
        return MPI_INT8_T;
    case COHORT_UINT8:
        return MPI_UINT8_T;
    case COHORT_INT32:
        return MPI_INT32_T;
    case COHORT_UINT32:
        return MPI_UINT32_T;
    case COHORT_INT64:
        return MPI_INT64_T;
    case COHORT_UINT64:
        return MPI_UINT64_T;
    case COHORT_FLOAT32:
        return MPI_FLOAT;
    case COHORT_FLOAT64:
        return MPI_DOUBLE;
    default:
        return bench_colls[b->coll].has_op ? MPI_DATATYPE_NULL : MPI_UINT16_T;
    }
}

/* MPI has no AVG: it runs SUM (marked in the output). */
static MPI_Op bench_mpi_op(cohort_op_t op)
{
    return op == COHORT_PROD  ? MPI_PROD
           : op == COHORT_MIN ? MPI_MIN
           : op == COHORT_MAX ? MPI_MAX
                              : MPI_SUM;
}

void bench_mpi_call(const bench_t *b)
{
    MPI_Datatype t = bench_mpi_type(b);
    MPI_Op op = bench_mpi_op(b->op);
    int n = (int)b->count, root = (int)b->root;

    switch (b->coll) {
    case BENCH_BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case BENCH_BCAST:
        MPI_Bcast(b->rbuf, n, t, root, MPI_COMM_WORLD);
        break;
    case BENCH_REDUCE:
        MPI_Reduce(b->sbuf, b->rbuf, n, t, op, root, MPI_COMM_WORLD);
        break;
    case BENCH_ALLREDUCE:
        MPI_Allreduce(b->sbuf, b->rbuf, n, t, op, MPI_COMM_WORLD);
        break;
    case BENCH_ALLGATHER:
        MPI_Allgather(b->sbuf, n, t, b->rbuf, n, t, MPI_COMM_WORLD);
        break;
    case BENCH_REDUCE_SCATTER:
        MPI_Reduce_scatter_block(b->sbuf, b->rbuf, n, t, op, MPI_COMM_WORLD);
        break;
    default:
        MPI_Alltoall(b->sbuf, n, t, b->rbuf, n, t, MPI_COMM_WORLD);
        break;
    }
}

/* The value Open MPI really uses, read back through MPI_T; -1 when it cannot be read. */
static int bench_mpi_cvar(const char *name)
{
    int provided, idx, count, verbosity, bind, scope, nlen, dlen, value = -1;
    char vname[256], desc[1024];
    MPI_Datatype type;
    MPI_T_enum enumtype;
    MPI_T_cvar_handle h;
    union {
        int i;
        long long ll;
        char bytes[32];
    } buf;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        return -1;
    }
    nlen = sizeof(vname);
    dlen = sizeof(desc);
    if (MPI_T_cvar_get_index(name, &idx) == MPI_SUCCESS &&
        MPI_T_cvar_get_info(idx, vname, &nlen, &verbosity, &type, &enumtype, desc, &dlen, &bind,
                            &scope) == MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) == MPI_SUCCESS) {
        memset(&buf, 0, sizeof(buf));
        if (count == 1 && MPI_T_cvar_read(h, &buf) == MPI_SUCCESS) {
            if (type == MPI_INT || type == MPI_UNSIGNED) {
                value = buf.i;
            } else if (type == MPI_C_BOOL || type == MPI_CHAR) {
                value = buf.bytes[0] != 0;
            } else if (type == MPI_LONG_LONG) {
                value = (int)buf.ll;
            }
        }
        MPI_T_cvar_handle_free(&h);
    }
    MPI_T_finalize();
    return value;
}
#endif

/* Why the header has no MPI figures. */
const char *bench_mpi_absent(const bench_t *b)
{
#ifdef BENCH_WITH_MPI
    return b->mem_cuda ? "not run (device buffers; this MPI is not CUDA-aware)"
                       : "not run (--no-mpi)";
#else
    (void)b;
    return "not built in (cohort only)";
#endif
}

/* MPI can run this size: built with it, a type for it, and a count that fits an int. */
int bench_mpi_usable(const bench_t *b)
{
#ifdef BENCH_WITH_MPI
    return b->run.mpi && bench_mpi_type(b) != MPI_DATATYPE_NULL && b->count <= (size_t)INT_MAX;
#else
    (void)b;
    return 0;
#endif
}

#ifdef BENCH_WITH_MPI
/* MPI beside cohort (one job: bench_run_start checked it): what the header says of Open MPI's waits
 * and version. */
void bench_mpi_facts(bench_t *b)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;

    b->mpi_yield = bench_mpi_cvar("mpi_yield_when_idle");
    snprintf(b->yield_note, sizeof(b->yield_note), "mpi_yield_when_idle=%s (%s)",
             b->mpi_yield < 0 ? "?"
             : b->mpi_yield   ? "1"
                              : "0",
             b->run.yield_set ? "set by cohort_bench through OMPI_MCA_mpi_yield_when_idle"
                              : "as the launcher or environment set it");
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n,")] = '\0';
    snprintf(b->mpi_lib, sizeof(b->mpi_lib), "%.*s", (int)sizeof(b->mpi_lib) - 1, lib);
}
#endif
