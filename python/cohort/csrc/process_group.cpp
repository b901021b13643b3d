/* CohortBackend: torch.distributed's backend "cohort" (a c10d::Backend, torch 2.x), and the
 * Python module (cohort._cohort_torch) whose create() cohort/torch.py registers as its creator.
 *
 * The process's one cohort context (engine.hpp) is made by the first group's creator: through
 * PMIx (cohort_init) under mpirun/srun/prterun, or through the c10d Store the creator is given
 * (cohort_init_exchange) where there is no PMIx server (torchrun); see start_engine below.
 *
 * Every operation becomes one Op for the progress thread (engine.hpp): nothing here calls
 * libcohort directly, so torch's own threads (DDP's reducer, autograd hooks) and Python may
 * call in at any time. A WorkCohort completes, and its Future with it, on the progress thread.
 * CPU tensors, and CUDA tensors where torch has CUDA: an operation's tensors all live on one
 * device, the caller's current stream of that device is synchronized before the operation is
 * queued (cohort.h: a device buffer's data must be ready when the call is made; cohort never
 * waits on the caller's streams), the progress thread makes that device current before it
 * posts, and the Future is one of that device. The machines that test it have no GPU: the
 * CUDA branch builds but has not run here (README says so). */
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/python.h>

#include <pybind11/chrono.h>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include "engine.hpp"

namespace cohort_torch
{

namespace py = pybind11;
using c10d::OpType;
using c10d::ReduceOp;
using Ms = std::chrono::milliseconds;
using PostFn = std::function<cohort_status_t(cohort_group_t *, std::vector<cohort_request_t *> &)>;

/* Point-to-point tags the backend uses itself (uneven all_to_all, gather, scatter); user
 * send/recv tags must stay below them. */
constexpr int kTagAlltoall = 0x7FFF0001;
constexpr int kTagGather = 0x7FFF0002;
constexpr int kTagScatter = 0x7FFF0003;
constexpr int kTagMonitored = 0x7FFF0004;
constexpr int kTagSparse = 0x7FFF0005;

[[noreturn]] void fail(cohort_status_t status, const std::string &what)
{
    throw Error(status, what);
}

/* A cohort group, made and freed on the progress thread. Operations hold it, so the group
 * outlives every operation posted on it even when its ProcessGroup goes first. */
struct Group {
    cohort_group_t *g = nullptr;
    bool owned = false; /* the world group belongs to the context */
    uint64_t id = 0;

    ~Group()
    {
        if (!owned || !Engine::running()) {
            return; /* cohort_finalize has freed it already */
        }
        auto op = std::make_unique<Op>();
        cohort_group_t *g_ = g;
        op->name = "group free";
        op->post = [g_](std::vector<cohort_request_t *> &) { return cohort_group_free(g_); };
        op->finish = [](cohort_status_t, const std::string &, int) {};
        try {
            Engine::get().submit(std::move(op));
        } catch (...) {
        }
    }
};

/* One nonblocking cohort operation as torch sees it. */
class WorkCohort : public c10d::Work
{
  public:
    /* A Future of CUDA tensors must name their device: torch records its events on that
     * device's streams when it completes and makes a waiter's stream wait on them. */
    /* profile: "cohort:all_reduce", the event torch's profiler records for it (gloo's are
     * "gloo:all_reduce"), from here until done(), with the shapes of inputs (as gloo's:
     * torch's suite checks them; a complex tensor as its real view, the way it is sent). */
    WorkCohort(OpType type, std::vector<at::Tensor> outputs, Ms timeout, const char *name,
               const char *profile, std::shared_ptr<Group> group, c10::Device device,
               const std::vector<at::Tensor> &inputs)
        : Work(-1, type, profile, std::optional<std::vector<at::Tensor>>(inputs)),
          outputs_(std::move(outputs)), timeout_(timeout), name_(name),
          group_(std::move(group)),
          future_(c10::make_intrusive<c10::ivalue::Future>(
              c10::ListType::create(c10::TensorType::get()),
              device.is_cuda() ? std::vector<c10::Device>{device} : std::vector<c10::Device>{}))
    {
    }

    bool isCompleted() override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return completed_;
    }

    bool isSuccess() const override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return completed_ && !exception_;
    }

    std::exception_ptr exception() const override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return exception_;
    }

    int sourceRank() const override
    {
        return source_;
    }
    std::vector<at::Tensor> result() override
    {
        return outputs_;
    }
    void synchronize() override {}
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override
    {
        return future_;
    }

    /* timeout 0 (torch's kNoTimeout): the process group's, from init_process_group. An
     * operation not done in time revokes its group (cohort_group_abort), as NCCL's watchdog
     * aborts a communicator: it and every later operation on the group then fail with
     * COHORT_ERR_REVOKED instead of hanging on members that are out of step. The message has
     * " Timed out " in it, the words torch's own tests look for in a timeout's error. */
    bool wait(Ms timeout) override
    {
        Ms limit = timeout > Ms(0) ? timeout : timeout_;
        std::unique_lock<std::mutex> lock(mutex_);
        if (limit > Ms(0)) {
            if (!cv_.wait_for(lock, limit, [this] { return completed_; })) {
                lock.unlock();
                std::shared_ptr<Group> g = group_;
                Engine::get().call([g](cohort_context_t *) { cohort_group_abort(g->g); });
                fail(COHORT_ERR_TIMEOUT, std::string(name_) + " Timed out after " +
                                             std::to_string(limit.count()) +
                                             " ms (the group is revoked)");
            }
        } else {
            cv_.wait(lock, [this] { return completed_; });
        }
        if (exception_) {
            std::rethrow_exception(exception_);
        }
        return true;
    }

    /* Progress thread: the operation's requests are done (or one failed). */
    void done(cohort_status_t status, const std::string &text, int source = -1)
    {
        std::exception_ptr e;
        if (status != COHORT_OK) {
            e = std::make_exception_ptr(std::runtime_error(text));
        }
        source_ = source;
        finish(e); /* wakes wait() */
        if (e) {
            future_->setError(e);
        } else {
            future_->markCompleted(c10::IValue(outputs_));
        }
    }

  private:
    std::vector<at::Tensor> outputs_;
    Ms timeout_;
    const char *name_;
    std::shared_ptr<Group> group_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
    int source_ = -1;
};

/* A contiguous tensor with t's data (complex as pairs of reals) and whether results must go
 * back into t. */
struct Dense {
    at::Tensor t;
    bool back;
};

void check_tensor(const at::Tensor &t, const std::string &what)
{
    if (!t.device().is_cpu() && !t.is_cuda()) {
        fail(COHORT_ERR_UNSUPPORTED, what + " is a " +
                                         c10::DeviceTypeName(t.device().type(), true) +
                                         " tensor: cohort takes CPU and CUDA tensors");
    }
    if (t.layout() != c10::kStrided) {
        fail(COHORT_ERR_UNSUPPORTED, what + " is not a dense (strided) tensor");
    }
}

Dense dense(const at::Tensor &t, const std::string &what)
{
    check_tensor(t, what);
    at::Tensor d = t.is_complex() ? at::view_as_real(t) : t;
    if (d.is_contiguous()) {
        return {d, false};
    }
    return {d.contiguous(), true};
}

/* The one device of an operation's tensors (undefined ones skipped; the CPU for none). */
c10::Device device_of(const std::vector<at::Tensor> &a, const std::vector<at::Tensor> &b,
                      const char *what)
{
    std::optional<c10::Device> dev;
    for (const auto *list : {&a, &b}) {
        for (const auto &t : *list) {
            if (!t.defined()) {
                continue;
            }
            if (dev && *dev != t.device()) {
                fail(COHORT_ERR_INVALID_ARG, std::string(what) + ": tensors on " + dev->str() +
                                                 " and " + t.device().str() +
                                                 " (one device per operation)");
            }
            dev = t.device();
        }
    }
    return dev ? *dev : c10::Device(c10::kCPU);
}

/* The calling thread's current stream of a CUDA device, synchronized: what was enqueued on it
 * (the caller's writes, this backend's own staging copies) is done. */
void sync_stream(const c10::Device &dev)
{
    if (dev.is_cuda()) {
        c10::impl::getDeviceGuardImpl(dev.type())->getStream(dev).synchronize();
    }
}

/* t's bytes as a flat uint8 tensor (a copy when t is not contiguous). */
at::Tensor bytes_of(const at::Tensor &t, const std::string &what)
{
    check_tensor(t, what);
    return t.contiguous().reshape({-1}).view(at::kByte);
}

size_t nbytes(const at::Tensor &t)
{
    return (size_t)t.numel() * t.element_size();
}

/* How a reduction runs: cohort's dtype and op, and whether the backend finishes it. bool is
 * reduced as uint8 with MAX for SUM and MIN for PRODUCT (or, and: a SUM of bytes would wrap at
 * 256 ranks); AVG on integers is a SUM divided (truncating) afterwards. */
struct Reduction {
    cohort_dtype_t dt;
    cohort_op_t op;
    bool int_avg = false;
};

Reduction reduction(const at::Tensor &d, const ReduceOp &rop, const char *what)
{
    Reduction r{COHORT_UINT8, COHORT_SUM};
    bool is_int = true;
    switch (d.scalar_type()) {
    case at::kBool:
        r.dt = COHORT_UINT8;
        break;
    case at::kByte:
        r.dt = COHORT_UINT8;
        break;
    case at::kChar:
        r.dt = COHORT_INT8;
        break;
    case at::kInt:
        r.dt = COHORT_INT32;
        break;
    case at::kLong:
        r.dt = COHORT_INT64;
        break;
    case at::kHalf:
        r.dt = COHORT_FLOAT16;
        is_int = false;
        break;
    case at::kBFloat16:
        r.dt = COHORT_BFLOAT16;
        is_int = false;
        break;
    case at::kFloat:
        r.dt = COHORT_FLOAT32;
        is_int = false;
        break;
    case at::kDouble:
        r.dt = COHORT_FLOAT64;
        is_int = false;
        break;
    default:
        fail(COHORT_ERR_UNSUPPORTED, std::string(what) + ": dtype " +
                                         c10::toString(d.scalar_type()) +
                                         " has no cohort reduction");
    }
    bool is_bool = d.scalar_type() == at::kBool;
    switch ((ReduceOp::RedOpType)rop) {
    case ReduceOp::SUM:
        r.op = is_bool ? COHORT_MAX : COHORT_SUM;
        break;
    case ReduceOp::PRODUCT:
        r.op = is_bool ? COHORT_MIN : COHORT_PROD;
        break;
    case ReduceOp::MIN:
        r.op = COHORT_MIN;
        break;
    case ReduceOp::MAX:
        r.op = COHORT_MAX;
        break;
    case ReduceOp::AVG:
        if (is_bool) {
            fail(COHORT_ERR_UNSUPPORTED, std::string(what) + ": AVG of bool tensors");
        }
        r.op = is_int ? COHORT_SUM : COHORT_AVG;
        r.int_avg = is_int;
        break;
    default:
        fail(COHORT_ERR_UNSUPPORTED, std::string(what) + ": reduction " +
                                         std::to_string((int)rop.op_) +
                                         " is not supported (SUM, PRODUCT, MIN, MAX, AVG are)");
    }
    return r;
}

const at::Tensor &one(const std::vector<at::Tensor> &ts, const char *what)
{
    if (ts.size() != 1) {
        fail(COHORT_ERR_UNSUPPORTED, std::string(what) + " takes one tensor per process (got " +
                                         std::to_string(ts.size()) + ")");
    }
    return ts[0];
}

class CohortBackend : public c10d::Backend
{
  public:
    /* ranks: the group's world ranks in group rank order (empty: the world). Made by its
     * members only: no message, whoever else calls what (cohort_group_create). */
    CohortBackend(int rank, int size, std::vector<int64_t> ranks, Ms timeout)
        : Backend(rank, size), ranks_(std::move(ranks)), timeout_(timeout)
    {
        Engine &e = Engine::get();
        /* The default group (no ranks given) is the context's world group. Any other group,
         * one of every rank included, is a cohort group of its own: its messages and its
         * revocation (a timeout, a failed monitored barrier) stay its own. */
        bool world = ranks_.empty();
        if (world) {
            for (int i = 0; i < size; i++) {
                ranks_.push_back(i);
            }
        }
        if ((int)ranks_.size() != size || rank < 0 || rank >= size ||
            ranks_[rank] != e.world_rank()) {
            fail(COHORT_ERR_INVALID_ARG,
                 "torch's group rank " + std::to_string(rank) + " of " + std::to_string(size) +
                     " is not world rank " + std::to_string(e.world_rank()) + " of " +
                     std::to_string(e.world_size()) + " (bootstrap " + e.bootstrap() +
                     "): the group's ranks (global_ranks_in_group) do not hold this rank "
                     "there");
        }
        group_ = std::make_shared<Group>();
        cohort_status_t st = COHORT_OK;
        std::vector<int> members(ranks_.begin(), ranks_.end());
        /* On torch's thread: creation takes the context's lock and sends nothing, so the
         * progress thread need not be woken for it (cohort.h, Threading). */
        e.call_here([&](cohort_context_t *ctx) {
            if (world) {
                group_->g = cohort_world(ctx);
            } else {
                st = cohort_group_create(ctx, "torch", members.data(), (int)members.size(),
                                         &group_->g);
                group_->owned = st == COHORT_OK;
            }
            if (group_->g != nullptr) {
                group_->id = cohort_group_id(group_->g);
            }
        });
        if (st != COHORT_OK) {
            fail(st, "cohort_group_create");
        }
    }

    const std::string getBackendName() const override
    {
        return "cohort";
    }
    const std::vector<int64_t> &globalRanks() const
    {
        return ranks_;
    }
    uint64_t groupId() const
    {
        return group_->id;
    }
    Ms timeout() const
    {
        return timeout_;
    }

    void abortGroup()
    {
        auto g = group_;
        Engine::get().call([g](cohort_context_t *) { cohort_group_abort(g->g); });
    }

    uint64_t getSequenceNumberForGroup() override
    {
        return seq_;
    }

    c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                             const c10d::AllreduceOptions &opts) override
    {
        const at::Tensor &t = one(tensors, "all_reduce");
        if (t.layout() == c10::kSparse) {
            return sparseAllreduce(t, opts);
        }
        Dense d = dense(t, "all_reduce tensor");
        Reduction r = reduction(d.t, opts.reduceOp, "all_reduce");
        return reduceInPlace(OpType::ALLREDUCE, "all_reduce", t, d, r, opts.timeout);
    }

    /* all_reduce of a sparse COO tensor (SUM, CPU), as gloo offers it: every rank's entries
     * (indices and values) go to every other rank, and each adds them up (coalesce). Two
     * steps, since a rank's entry count is its own: the counts by an all_gather, waited for
     * here, then the entries by point-to-point, completed on the progress thread. The tensor
     * becomes the coalesced sum in place. */
    c10::intrusive_ptr<c10d::Work> sparseAllreduce(const at::Tensor &t,
                                                   const c10d::AllreduceOptions &opts)
    {
        if (!t.device().is_cpu()) {
            fail(COHORT_ERR_UNSUPPORTED, "all_reduce of a sparse tensor: CPU tensors only, not " +
                                             t.device().str());
        }
        if (opts.reduceOp != c10d::ReduceOp::SUM) {
            fail(COHORT_ERR_UNSUPPORTED, "all_reduce of a sparse tensor: SUM only");
        }
        int n = getSize(), me = getRank();
        at::Tensor local = t.coalesce();
        at::Tensor idx = local._indices().contiguous();
        at::Tensor val = local._values().contiguous();
        int64_t nnz = local._nnz();
        int64_t row = val.element_size(); /* bytes of one entry's values */
        for (int64_t i = 1; i < val.dim(); i++) {
            row *= val.size(i);
        }
        int64_t per = idx.size(0) * (int64_t)sizeof(int64_t) + row; /* bytes of one entry */
        at::Tensor counts = at::empty({n}, at::kLong);
        at::Tensor mine = at::full({1}, nnz, at::kLong);
        launch(OpType::ALLGATHER, "all_reduce (sparse: entry counts)", c10::Device(c10::kCPU),
               {counts}, opts.timeout,
               allgatherPost(mine, counts), nullptr)
            ->wait();
        at::Tensor packed = at::cat({idx.view({-1}).view(at::kByte), val.view({-1}).view(at::kByte)});
        std::vector<at::Tensor> sends(n), recvs(n);
        for (int r = 0; r < n; r++) {
            if (r != me) {
                sends[r] = packed;
                recvs[r] = at::empty({counts[r].item<int64_t>() * per}, at::kByte);
            }
        }
        recvs[me] = packed;
        std::vector<at::Tensor> from = recvs;
        recvs[me] = at::Tensor();
        int64_t sdim = idx.size(0);
        std::vector<int64_t> vshape = val.sizes().vec();
        at::Tensor out = t;
        return launch(OpType::ALLREDUCE, "all_reduce", t.device(), {t}, opts.timeout,
                      pairwisePost(sends, recvs, -1, kTagSparse),
                      [from, counts, sdim, vshape, val, out]() mutable {
                          std::vector<at::Tensor> is, vs;
                          for (size_t r = 0; r < from.size(); r++) {
                              int64_t k = counts[r].item<int64_t>();
                              int64_t ib = k * sdim * (int64_t)sizeof(int64_t);
                              is.push_back(from[r].narrow(0, 0, ib).view(at::kLong).view({sdim, k}));
                              vshape[0] = k;
                              vs.push_back(from[r]
                                               .narrow(0, ib, from[r].numel() - ib)
                                               .view(val.scalar_type())
                                               .view(vshape));
                          }
                          at::Tensor sum = at::sparse_coo_tensor(at::cat(is, 1), at::cat(vs, 0),
                                                                 out.sizes())
                                               .coalesce();
                          out.copy_(sum);
                      });
    }

    c10::intrusive_ptr<c10d::Work>
    allreduce_coalesced(std::vector<at::Tensor> &tensors,
                        const c10d::AllreduceCoalescedOptions &opts) override
    {
        if (tensors.empty()) {
            fail(COHORT_ERR_INVALID_ARG, "all_reduce_coalesced: no tensors");
        }
        std::vector<at::Tensor> flat;
        for (auto &t : tensors) {
            check_tensor(t, "all_reduce_coalesced tensor");
            if (t.scalar_type() != tensors[0].scalar_type()) {
                fail(COHORT_ERR_INVALID_ARG, "all_reduce_coalesced: tensors differ in dtype");
            }
            flat.push_back(t.reshape({-1}));
        }
        at::Tensor all = at::cat(flat);
        Reduction r = reduction(all, opts.reduceOp, "all_reduce_coalesced");
        std::vector<at::Tensor> outs = tensors;
        return launch(OpType::ALLREDUCE_COALESCED, "all_reduce_coalesced",
                      device_of(tensors, {}, "all_reduce_coalesced"), outs, opts.timeout,
                      allreducePost(all, r), [all, outs, r, n = getSize()]() {
                          finishAvg(all, r, n);
                          int64_t off = 0;
                          for (auto &t : outs) {
                              t.copy_(all.narrow(0, off, t.numel()).view_as(t));
                              off += t.numel();
                          }
                      },
                      tensors);
    }

    c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                             const c10d::BroadcastOptions &opts) override
    {
        const at::Tensor &t = one(tensors, "broadcast");
        Dense d = dense(t, "broadcast tensor");
        int root = checkRoot(opts.rootRank, "broadcast");
        at::Tensor buf = d.t;
        return launch(
            OpType::BROADCAST, "broadcast", device_of({t}, {}, "broadcast"), {t}, opts.timeout,
            [buf, root](cohort_group_t *g, std::vector<cohort_request_t *> &reqs) {
                return post1(reqs, [&](cohort_request_t **r) {
                    return cohort_ibcast(g, buf.data_ptr(), nbytes(buf), COHORT_UINT8, root, r);
                });
            },
            copyBack(t, d), {t});
    }

    c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                          const c10d::ReduceOptions &opts) override
    {
        const at::Tensor &t = one(tensors, "reduce");
        Dense d = dense(t, "reduce tensor");
        Reduction r = reduction(d.t, opts.reduceOp, "reduce");
        int root = checkRoot(opts.rootRank, "reduce");
        bool mine = root == getRank();
        at::Tensor buf = d.t;
        std::function<void()> after;
        if (mine) {
            after = [buf, r, t, d, n = getSize()]() {
                finishAvg(buf, r, n);
                if (d.back) {
                    copyInto(t, buf);
                }
            };
        }
        return launch(
            OpType::REDUCE, "reduce", device_of({t}, {}, "reduce"), {t}, opts.timeout,
            [buf, r, root, mine](cohort_group_t *g, std::vector<cohort_request_t *> &reqs) {
                return post1(reqs, [&](cohort_request_t **q) {
                    return cohort_ireduce(g, mine ? COHORT_IN_PLACE : buf.data_ptr(),
                                          mine ? buf.data_ptr() : nullptr, (size_t)buf.numel(),
                                          r.dt, r.op, root, q);
                });
            },
            after, {t});
    }

    c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                             std::vector<at::Tensor> &inputs,
                                             const c10d::AllgatherOptions &opts) override
    {
        const at::Tensor &in = one(inputs, "all_gather");
        if (outputs.size() != 1) {
            fail(COHORT_ERR_UNSUPPORTED, "all_gather takes one output list per process");
        }
        std::vector<at::Tensor> outs = outputs[0];
        checkList(outs, in, "all_gather output");
        at::Tensor src = bytes_of(in, "all_gather input");
        at::Tensor flat = at::empty({(int64_t)nbytes(src) * getSize()}, src.options());
        return launch(OpType::ALLGATHER, "all_gather", device_of(outs, {in}, "all_gather"), outs,
                      opts.timeout, allgatherPost(src, flat),
                      [flat, outs]() { unpack(flat, outs); }, {in});
    }

    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                   const c10d::AllgatherOptions &opts) override
    {
        at::Tensor src = bytes_of(input, "all_gather_into_tensor input");
        Dense o = dense(output, "all_gather_into_tensor output");
        if (nbytes(o.t) != nbytes(src) * getSize() || output.dtype() != input.dtype()) {
            fail(COHORT_ERR_INVALID_ARG, "all_gather_into_tensor: output has " +
                                             std::to_string(output.numel()) + " elements, needs " +
                                             std::to_string(getSize()) + " x " +
                                             std::to_string(input.numel()));
        }
        return launch(OpType::_ALLGATHER_BASE, "all_gather_into_tensor",
                      device_of({output}, {input}, "all_gather_into_tensor"), {output}, opts.timeout,
                      allgatherPost(src, o.t), copyBack(output, o), {input});
    }

    c10::intrusive_ptr<c10d::Work>
    allgather_coalesced(std::vector<std::vector<at::Tensor>> &output_lists,
                        std::vector<at::Tensor> &inputs,
                        const c10d::AllgatherOptions &opts) override
    {
        if ((int)output_lists.size() != getSize()) {
            fail(COHORT_ERR_INVALID_ARG,
                 "all_gather_coalesced needs " + std::to_string(getSize()) + " output lists");
        }
        std::vector<at::Tensor> parts, outs;
        for (auto &t : inputs) {
            parts.push_back(bytes_of(t, "all_gather_coalesced input"));
        }
        for (auto &list : output_lists) {
            checkLists(list, inputs, "all_gather_coalesced output");
            outs.insert(outs.end(), list.begin(), list.end());
        }
        at::Tensor src = parts.empty() ? at::empty({0}, outs.empty() ? at::TensorOptions(at::kByte) : outs[0].options().dtype(at::kByte)) : at::cat(parts);
        at::Tensor flat = at::empty({(int64_t)nbytes(src) * getSize()}, src.options());
        return launch(OpType::ALLGATHER_COALESCED, "all_gather_coalesced",
                      device_of(outs, inputs, "all_gather_coalesced"), outs, opts.timeout,
                      allgatherPost(src, flat), [flat, outs]() { unpack(flat, outs); }, inputs);
    }

    c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                          std::vector<at::Tensor> &inputs,
                                          const c10d::GatherOptions &opts) override
    {
        const at::Tensor &in = one(inputs, "gather");
        int root = checkRoot(opts.rootRank, "gather");
        at::Tensor src = bytes_of(in, "gather input");
        if (getRank() != root) {
            return launch(OpType::GATHER, "gather", device_of({in}, {}, "gather"), {}, opts.timeout,
                          pairwisePost({src}, {}, root, kTagGather), nullptr, {in});
        }
        if (outputs.size() != 1) {
            fail(COHORT_ERR_INVALID_ARG, "gather takes one output list at the root");
        }
        std::vector<at::Tensor> outs = outputs[0];
        checkList(outs, in, "gather output");
        at::Tensor flat = at::empty({(int64_t)nbytes(src) * getSize()}, src.options());
        std::vector<at::Tensor> recvs = chunks(flat, getSize());
        recvs[root].copy_(src);
        recvs[root] = at::Tensor();
        return launch(OpType::GATHER, "gather", device_of(outs, {in}, "gather"), outs, opts.timeout,
                      pairwisePost({}, recvs, -1, kTagGather),
                      [flat, outs]() { unpack(flat, outs); }, {in});
    }

    c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                           std::vector<std::vector<at::Tensor>> &inputs,
                                           const c10d::ScatterOptions &opts) override
    {
        const at::Tensor &out = one(outputs, "scatter");
        int root = checkRoot(opts.rootRank, "scatter");
        Dense o = dense(out, "scatter output");
        at::Tensor dst = o.t.view({-1}).view(at::kByte);
        if (getRank() != root) {
            std::vector<at::Tensor> recvs(getSize());
            recvs[root] = dst;
            return launch(OpType::SCATTER, "scatter", device_of({out}, {}, "scatter"), {out},
                          opts.timeout,
                          pairwisePost({}, recvs, -1, kTagScatter), copyBack(out, o));
        }
        if (inputs.size() != 1) {
            fail(COHORT_ERR_INVALID_ARG, "scatter takes one input list at the root");
        }
        checkList(inputs[0], out, "scatter input");
        std::vector<at::Tensor> sends;
        for (auto &t : inputs[0]) {
            sends.push_back(bytes_of(t, "scatter input"));
        }
        dst.copy_(sends[root]);
        sends[root] = at::Tensor();
        return launch(OpType::SCATTER, "scatter", device_of({out}, inputs[0], "scatter"), {out},
                      opts.timeout,
                      pairwisePost(sends, {}, -1, kTagScatter), copyBack(out, o));
    }

    c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                  std::vector<std::vector<at::Tensor>> &inputs,
                                                  const c10d::ReduceScatterOptions &opts) override
    {
        const at::Tensor &out = one(outputs, "reduce_scatter");
        if (inputs.size() != 1) {
            fail(COHORT_ERR_UNSUPPORTED, "reduce_scatter takes one input list per process");
        }
        checkList(inputs[0], out, "reduce_scatter input");
        std::vector<at::Tensor> flat;
        for (auto &t : inputs[0]) {
            flat.push_back(t.reshape({-1}));
        }
        at::Tensor src = at::cat(flat);
        return reduceScatter(OpType::REDUCE_SCATTER, "reduce_scatter", out, src, opts);
    }

    c10::intrusive_ptr<c10d::Work>
    _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                         const c10d::ReduceScatterOptions &opts) override
    {
        if (input.numel() != output.numel() * getSize() || input.dtype() != output.dtype()) {
            fail(COHORT_ERR_INVALID_ARG, "reduce_scatter_tensor: input has " +
                                             std::to_string(input.numel()) + " elements, needs " +
                                             std::to_string(getSize()) + " x " +
                                             std::to_string(output.numel()));
        }
        return reduceScatter(OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", output,
                             dense(input, "reduce_scatter_tensor input").t, opts);
    }

    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                                 std::vector<int64_t> &out_splits,
                                                 std::vector<int64_t> &in_splits,
                                                 const c10d::AllToAllOptions &opts) override
    {
        c10::Device dev = device_of({output}, {input}, "all_to_all_single");
        at::Tensor src = bytes_of(input, "all_to_all_single input");
        Dense o = dense(output, "all_to_all_single output");
        at::Tensor dst = o.t.view({-1}).view(at::kByte);
        int size = getSize();
        if (out_splits.empty() && in_splits.empty()) {
            if (src.numel() != dst.numel() || src.numel() % size) {
                fail(COHORT_ERR_INVALID_ARG, "all_to_all_single: input and output need the "
                                             "same size, a multiple of the group size");
            }
            return launch(OpType::ALLTOALL_BASE, "all_to_all_single", dev, {output}, opts.timeout,
                          alltoallPost(src, dst), copyBack(output, o), {input});
        }
        std::vector<at::Tensor> sends = splitRows(src, input, in_splits);
        std::vector<at::Tensor> recvs = splitRows(dst, output, out_splits);
        recvs[getRank()].copy_(sends[getRank()]);
        sends[getRank()] = recvs[getRank()] = at::Tensor();
        return launch(OpType::ALLTOALL_BASE, "all_to_all_single", dev, {output}, opts.timeout,
                      pairwisePost(sends, recvs, -1, kTagAlltoall), copyBack(output, o),
                      {input});
    }

    c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
                                            std::vector<at::Tensor> &inputs,
                                            const c10d::AllToAllOptions &opts) override
    {
        int size = getSize();
        if ((int)outputs.size() != size || (int)inputs.size() != size) {
            fail(COHORT_ERR_INVALID_ARG,
                 "all_to_all needs " + std::to_string(size) + " input and output tensors");
        }
        c10::Device dev = device_of(outputs, inputs, "all_to_all");
        std::vector<at::Tensor> sends, recvs;
        bool even = true;
        for (int i = 0; i < size; i++) {
            sends.push_back(bytes_of(inputs[i], "all_to_all input"));
            check_tensor(outputs[i], "all_to_all output");
            recvs.push_back(at::empty({(int64_t)nbytes(outputs[i])}, outputs[i].options().dtype(at::kByte)));
            even = even && sends[i].numel() == sends[0].numel() &&
                   recvs[i].numel() == sends[0].numel();
        }
        std::vector<at::Tensor> outs = outputs;
        if (even) {
            at::Tensor src = at::cat(sends);
            at::Tensor flat = at::empty_like(src);
            return launch(OpType::ALLTOALL, "all_to_all", dev, outs, opts.timeout,
                          alltoallPost(src, flat), [flat, outs]() { unpack(flat, outs); },
                          inputs);
        }
        int me = getRank();
        recvs[me].copy_(sends[me]);
        std::vector<at::Tensor> mine = recvs;
        sends[me] = recvs[me] = at::Tensor();
        return launch(OpType::ALLTOALL, "all_to_all", dev, outs, opts.timeout,
                      pairwisePost(sends, recvs, -1, kTagAlltoall), [mine, outs]() {
                          for (size_t i = 0; i < outs.size(); i++) {
                              copyBytes(outs[i], mine[i]);
                          }
                      },
                      inputs);
    }

    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override
    {
        return launch(
            OpType::BARRIER, "barrier", c10::Device(c10::kCPU), {}, opts.timeout,
            [](cohort_group_t *g, std::vector<cohort_request_t *> &reqs) {
                return post1(reqs, [&](cohort_request_t **r) { return cohort_ibarrier(g, r); });
            },
            nullptr);
    }

    /* dist.monitored_barrier as torch defines it (gloo's): every rank sends a token to group
     * rank 0, which waits for all of them within the timeout (the group's when unset; 0: no
     * waiting, whoever is not there yet has failed) and then acknowledges each. A rank missing
     * at rank 0 is named in gloo's words: the first one ("Rank 2 failed to pass
     * monitoredBarrier in 1000 ms"), or every one with wait_all_ranks ("Ranks 2, 3 failed
     * ..."); a rank that got no acknowledgement says so. A failed monitored barrier revokes
     * the group, as a timeout does (its receives are cancelled with it). */
    void monitoredBarrier(const c10d::BarrierOptions &opts, bool wait_all_ranks) override
    {
        Ms limit = opts.timeout == c10d::kUnsetTimeout ? timeout_ : opts.timeout;
        auto deadline = std::chrono::steady_clock::now() + limit;
        int me = getRank(), n = getSize();
        auto p2p = [&](int peer, bool send) {
            std::vector<at::Tensor> sends(n), recvs(n);
            (send ? sends : recvs)[peer] = at::zeros({1}, at::kByte);
            return launch(send ? OpType::SEND : OpType::RECV,
                          send ? "monitored_barrier send" : "monitored_barrier recv",
                          c10::Device(c10::kCPU), {}, Ms(0),
                          pairwisePost(sends, recvs, -1, kTagMonitored), nullptr);
        };
        /* the peers (of works, one per peer) not done well by the deadline */
        auto settle = [&](const std::vector<std::pair<int, c10::intrusive_ptr<c10d::Work>>> &ws) {
            std::vector<int> failed;
            for (auto &[peer, w] : ws) {
                while (!w->isCompleted() && std::chrono::steady_clock::now() < deadline) {
                    std::this_thread::sleep_for(std::chrono::microseconds(200));
                }
                if (!w->isCompleted() || w->exception()) {
                    failed.push_back(peer);
                }
            }
            return failed;
        };
        std::string in = " failed to pass monitoredBarrier in " + std::to_string(limit.count()) +
                         " ms";
        std::vector<std::pair<int, c10::intrusive_ptr<c10d::Work>>> ws;
        if (me != 0) {
            ws.emplace_back(0, p2p(0, true));
            ws.emplace_back(0, p2p(0, false));
            if (!settle(ws).empty()) {
                abortGroup();
                fail(COHORT_ERR_TIMEOUT, "Rank " + std::to_string(me) +
                                             " successfully reached monitoredBarrier, but "
                                             "received errors while waiting for send/recv from "
                                             "rank 0. Please check rank 0 logs for faulty rank.");
            }
            return;
        }
        for (int r = 1; r < n; r++) {
            ws.emplace_back(r, p2p(r, false));
        }
        std::vector<int> failed;
        if (!wait_all_ranks) {
            /* gloo's order: the ranks one by one, each within what is left of the timeout;
             * with nothing left before a rank (timeout 0 always), rank 0 itself has timed out,
             * said in gloo's words with the ranks it had already seen. */
            std::string seen;
            for (auto &pw : ws) {
                if (std::chrono::steady_clock::now() >= deadline) {
                    abortGroup();
                    fail(COHORT_ERR_TIMEOUT,
                         "Rank " + std::to_string(me) + " timed out in monitoredBarrier after " +
                             std::to_string(limit.count()) + " ms. " +
                             (seen.empty() ? "No ranks successfully processed in monitoredBarrier."
                                           : "Successfully processed ranks: " + seen));
                }
                if (!settle({pw}).empty()) {
                    failed.push_back(pw.first);
                    break;
                }
                seen += (seen.empty() ? "" : ", ") + std::to_string(pw.first);
            }
        } else {
            failed = settle(ws);
        }
        if (!failed.empty()) {
            abortGroup();
            std::string names;
            for (size_t i = 0; i < (wait_all_ranks ? failed.size() : 1); i++) {
                names += (i ? ", " : "") + std::to_string(failed[i]);
            }
            fail(COHORT_ERR_TIMEOUT, std::string("[Rank 0]: ") +
                                         (wait_all_ranks ? "Ranks " : "Rank ") + names + in);
        }
        ws.clear();
        for (int r = 1; r < n; r++) {
            ws.emplace_back(r, p2p(r, true));
        }
        settle(ws);
    }

    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst, int tag) override
    {
        const at::Tensor &t = one(tensors, "send");
        at::Tensor src = bytes_of(t, "send tensor");
        checkPeer(dst, tag, "send");
        std::vector<at::Tensor> sends(getSize());
        sends[dst] = src;
        return launch(OpType::SEND, "send", src.device(), {}, Ms(0),
                      pairwisePost(sends, {}, -1, tag), nullptr, {t});
    }

    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src, int tag) override
    {
        const at::Tensor &t = one(tensors, "recv");
        Dense d = dense(t, "recv tensor");
        checkPeer(src, tag, "recv");
        std::vector<at::Tensor> recvs(getSize());
        recvs[src] = d.t.view({-1}).view(at::kByte);
        return launch(OpType::RECV, "recv", t.device(), {t}, Ms(0),
                      pairwisePost({}, recvs, -1, tag),
                      copyBack(t, d), {t});
    }

    /* Work::sourceRank() says whose message it took (a group rank). Named recvAnySource, as
     * gloo names it: its profiler event is "cohort:recvAnySource", which torch's suite counts. */
    c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors, int tag) override
    {
        const at::Tensor &t = one(tensors, "recv");
        Dense d = dense(t, "recv tensor");
        checkPeer(0, tag, "recv");
        at::Tensor buf = d.t.view({-1}).view(at::kByte);
        return launch(
            OpType::RECVANYSOURCE, "recvAnySource", t.device(), {t}, Ms(0),
            [buf, tag](cohort_group_t *g, std::vector<cohort_request_t *> &reqs) {
                return post1(reqs, [&](cohort_request_t **q) {
                    return cohort_irecv(g, buf.data_ptr(), nbytes(buf), COHORT_UINT8,
                                        COHORT_ANY_SOURCE, tag, q);
                });
            },
            copyBack(t, d), {t});
    }

  private:
    static cohort_status_t post1(std::vector<cohort_request_t *> &reqs,
                                 const std::function<cohort_status_t(cohort_request_t **)> &fn)
    {
        cohort_request_t *r = nullptr;
        cohort_status_t st = fn(&r);
        if (st == COHORT_OK) {
            reqs.push_back(r);
        }
        return st;
    }

    /* dev: where the operation's tensors live (device_of). For a CUDA device the caller's
     * stream is synchronized here, after every staging copy the operation made; the progress
     * thread posts with that device current (libcohort's device copies and kernels run on the
     * calling thread's device) and synchronizes its own stream after the unpacking copies, so
     * the results are ready for every stream when the Work completes, as cohort.h promises
     * for a completed request. */
    c10::intrusive_ptr<c10d::Work> launch(OpType type, const char *name, c10::Device dev,
                                          std::vector<at::Tensor> outputs, Ms timeout, PostFn post,
                                          std::function<void()> after,
                                          const std::vector<at::Tensor> &inputs = {})
    {
        std::string profile = std::string("cohort:") + name;
        std::vector<at::Tensor> shapes;
        for (const auto &t : inputs) {
            shapes.push_back(t.is_complex() ? at::view_as_real(t) : t);
        }
        auto work = c10::make_intrusive<WorkCohort>(type, std::move(outputs),
                                                    timeout > Ms(0) ? timeout : timeout_, name,
                                                    profile.c_str(), group_, dev, shapes);
        auto op = std::make_unique<Op>();
        op->name = std::string(name) + " on group 0x" + hex(group_->id);
        std::shared_ptr<Group> group = group_;
        op->post = [group, post, dev](std::vector<cohort_request_t *> &reqs) {
            if (dev.is_cuda()) {
                c10::impl::getDeviceGuardImpl(dev.type())->setDevice(dev);
            }
            return post(group->g, reqs);
        };
        op->finish = [work, after, dev](cohort_status_t st, const std::string &text, int source) {
            std::string why = text;
            if (st == COHORT_OK && after) {
                try {
                    after();
                    sync_stream(dev);
                } catch (const std::exception &e) {
                    st = COHORT_ERR_INVALID_ARG;
                    why = std::string("cohort backend: unpacking the result: ") + e.what();
                }
            }
            work->done(st, why, source);
        };
        sync_stream(dev);
        seq_++;
        Engine::get().submit(std::move(op));
        return work;
    }

    static std::string hex(uint64_t v)
    {
        char buf[20];
        snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
        return buf;
    }

    int checkRoot(int64_t root, const char *what) const
    {
        if (root < 0 || root >= getSize()) {
            fail(COHORT_ERR_INVALID_ARG, std::string(what) + ": root " + std::to_string(root) +
                                             " is not a rank of this group");
        }
        return (int)root;
    }

    void checkPeer(int peer, int tag, const char *what) const
    {
        checkRoot(peer, what);
        if (tag < 0 || tag >= kTagAlltoall) {
            fail(COHORT_ERR_INVALID_ARG, std::string(what) + ": tag " + std::to_string(tag) +
                                             " is outside 0.." + std::to_string(kTagAlltoall - 1));
        }
    }

    static void checkEach(const std::vector<at::Tensor> &list, const at::Tensor &like,
                          const char *what)
    {
        for (auto &o : list) {
            check_tensor(o, what);
            if (o.numel() != like.numel() || o.dtype() != like.dtype()) {
                fail(COHORT_ERR_INVALID_ARG,
                     std::string(what) + "s must match the input's size and dtype");
            }
        }
    }

    void checkList(const std::vector<at::Tensor> &list, const at::Tensor &like,
                   const char *what) const
    {
        if ((int)list.size() != getSize()) {
            fail(COHORT_ERR_INVALID_ARG, std::string(what) + ": needs " +
                                             std::to_string(getSize()) + " tensors, got " +
                                             std::to_string(list.size()));
        }
        checkEach(list, like, what);
    }

    static void checkLists(const std::vector<at::Tensor> &list, const std::vector<at::Tensor> &like,
                           const char *what)
    {
        if (list.size() != like.size()) {
            fail(COHORT_ERR_INVALID_ARG, std::string(what) + ": each list needs " +
                                             std::to_string(like.size()) + " tensors");
        }
        for (size_t i = 0; i < list.size(); i++) {
            checkEach({list[i]}, like[i], what);
        }
    }

    static std::vector<at::Tensor> chunks(const at::Tensor &flat, int n)
    {
        std::vector<at::Tensor> parts;
        int64_t per = flat.numel() / n;
        for (int i = 0; i < n; i++) {
            parts.push_back(flat.narrow(0, i * per, per));
        }
        return parts;
    }

    /* dim-0 split of t (bytes in b) by sizes, or evenly when sizes is empty. */
    std::vector<at::Tensor> splitRows(const at::Tensor &b, const at::Tensor &t,
                                      std::vector<int64_t> sizes) const
    {
        int size = getSize();
        int64_t rows = t.dim() ? t.size(0) : 1;
        if (sizes.empty()) {
            if (rows % size) {
                fail(COHORT_ERR_INVALID_ARG, "all_to_all_single: dim 0 (" + std::to_string(rows) +
                                                 ") is not a multiple of the group size");
            }
            sizes.assign(size, rows / size);
        }
        if ((int)sizes.size() != size ||
            std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != rows) {
            fail(COHORT_ERR_INVALID_ARG, "all_to_all_single: split sizes do not cover dim 0 (" +
                                             std::to_string(rows) + ") in " + std::to_string(size) +
                                             " parts");
        }
        int64_t row = rows ? b.numel() / rows : 0;
        std::vector<at::Tensor> parts;
        int64_t off = 0;
        for (int64_t s : sizes) {
            parts.push_back(b.narrow(0, off * row, s * row));
            off += s;
        }
        return parts;
    }

    static void copyBytes(const at::Tensor &dst, const at::Tensor &bytes)
    {
        if (dst.is_contiguous()) {
            dst.view({-1}).view(at::kByte).copy_(bytes);
        } else {
            dst.copy_(bytes.view(dst.scalar_type()).view(dst.sizes()));
        }
    }

    static void copyInto(const at::Tensor &t, const at::Tensor &d)
    {
        t.copy_(t.is_complex() ? at::view_as_complex(d) : d);
    }

    /* flat holds the outputs' bytes one after another. */
    static void unpack(const at::Tensor &flat, const std::vector<at::Tensor> &outs)
    {
        int64_t off = 0;
        for (auto &o : outs) {
            int64_t n = (int64_t)nbytes(o);
            copyBytes(o, flat.narrow(0, off, n));
            off += n;
        }
    }

    static std::function<void()> copyBack(const at::Tensor &t, const Dense &d)
    {
        if (!d.back) {
            return nullptr;
        }
        at::Tensor buf = d.t;
        return [t, buf]() { copyInto(t, buf); };
    }

    static void finishAvg(const at::Tensor &buf, const Reduction &r, int size)
    {
        if (r.int_avg) {
            buf.div_(size, "trunc");
        }
    }

    static PostFn allreducePost(const at::Tensor &buf, const Reduction &r)
    {
        return [buf, r](cohort_group_t *g, std::vector<cohort_request_t *> &reqs) {
            return post1(reqs, [&](cohort_request_t **q) {
                return cohort_iallreduce(g, COHORT_IN_PLACE, buf.data_ptr(), (size_t)buf.numel(),
                                         r.dt, r.op, q);
            });
        };
    }

    static PostFn allgatherPost(const at::Tensor &src, const at::Tensor &dst)
    {
        return [src, dst](cohort_group_t *g, std::vector<cohort_request_t *> &reqs) {
            return post1(reqs, [&](cohort_request_t **q) {
                return cohort_iallgather(g, src.data_ptr(), dst.data_ptr(), nbytes(src),
                                         COHORT_UINT8, q);
            });
        };
    }

    PostFn alltoallPost(const at::Tensor &src, const at::Tensor &dst) const
    {
        size_t per = nbytes(src) / getSize();
        return [src, dst, per](cohort_group_t *g, std::vector<cohort_request_t *> &reqs) {
            return post1(reqs, [&](cohort_request_t **q) {
                return cohort_ialltoall(g, src.data_ptr(), dst.data_ptr(), per, COHORT_UINT8, q);
            });
        };
    }

    /* Byte blocks over point-to-point: sends[j] to rank j, recvs[i] from rank i (undefined
     * tensors are skipped; a vector may be empty). send_to >= 0 sends every block to that rank
     * instead (a rooted operation's non-root side). Receives are posted first. */
    static PostFn pairwisePost(std::vector<at::Tensor> sends, std::vector<at::Tensor> recvs,
                               int send_to, int tag)
    {
        return
            [sends, recvs, send_to, tag](cohort_group_t *g, std::vector<cohort_request_t *> &reqs) {
                cohort_status_t st = COHORT_OK;
                for (size_t i = 0; st == COHORT_OK && i < recvs.size(); i++) {
                    if (recvs[i].defined()) {
                        st = post1(reqs, [&](cohort_request_t **q) {
                            return cohort_irecv(g, recvs[i].data_ptr(), nbytes(recvs[i]),
                                                COHORT_UINT8, (int)i, tag, q);
                        });
                    }
                }
                for (size_t j = 0; st == COHORT_OK && j < sends.size(); j++) {
                    if (sends[j].defined()) {
                        int peer = send_to >= 0 ? send_to : (int)j;
                        st = post1(reqs, [&](cohort_request_t **q) {
                            return cohort_isend(g, sends[j].data_ptr(), nbytes(sends[j]),
                                                COHORT_UINT8, peer, tag, q);
                        });
                    }
                }
                return st;
            };
    }

    c10::intrusive_ptr<c10d::Work> reduceInPlace(OpType type, const char *name, const at::Tensor &t,
                                                 const Dense &d, const Reduction &r, Ms timeout)
    {
        at::Tensor buf = d.t;
        std::function<void()> after;
        if (r.int_avg || d.back) {
            after = [buf, r, t, d, n = getSize()]() {
                finishAvg(buf, r, n);
                if (d.back) {
                    copyInto(t, buf);
                }
            };
        }
        return launch(type, name, t.device(), {t}, timeout, allreducePost(buf, r), after, {t});
    }

    c10::intrusive_ptr<c10d::Work> reduceScatter(OpType type, const char *name,
                                                 const at::Tensor &out, const at::Tensor &src,
                                                 const c10d::ReduceScatterOptions &opts)
    {
        Dense o = dense(out, std::string(name) + " output");
        Reduction r = reduction(o.t, opts.reduceOp, name);
        at::Tensor in = src.is_complex() ? at::view_as_real(src) : src;
        at::Tensor dst = o.t;
        std::function<void()> after;
        if (r.int_avg || o.back) {
            after = [dst, r, out, o, n = getSize()]() {
                finishAvg(dst, r, n);
                if (o.back) {
                    copyInto(out, dst);
                }
            };
        }
        return launch(
            type, name, device_of({out}, {src}, name), {out}, opts.timeout,
            [in, dst, r](cohort_group_t *g, std::vector<cohort_request_t *> &reqs) {
                return post1(reqs, [&](cohort_request_t **q) {
                    return cohort_ireduce_scatter(g, in.data_ptr(), dst.data_ptr(),
                                                  (size_t)dst.numel(), r.dt, r.op, q);
                });
            },
            after);
    }

    std::vector<int64_t> ranks_;
    Ms timeout_;
    std::shared_ptr<Group> group_;
    std::atomic<uint64_t> seq_{0};
};

#ifndef COHORT_TORCH_BUILT_FOR
#define COHORT_TORCH_BUILT_FOR "unknown"
#endif
/* The torch this module was built for ("<version>@<torch's directory>", from configure), read
 * by cohort/torch.py from the file's bytes before it loads it: loaded into a process with
 * another torch, it would bring a second libtorch in, which crashes in its constructors. */
extern "C" __attribute__((used, visibility("default"))) const char cohort_torch_built_for[] =
    "cohort-torch-built-for=" COHORT_TORCH_BUILT_FOR;

/* COHORT_BOOTSTRAP=pmix|store, else PMIx where the launcher set one up (PMIX_NAMESPACE:
 * mpirun, srun, prterun) and the store otherwise (torchrun). */
bool use_store()
{
    const char *how = getenv("COHORT_BOOTSTRAP");
    if (how != nullptr && *how != '\0') {
        if (strcmp(how, "store") == 0) {
            return true;
        }
        if (strcmp(how, "pmix") == 0) {
            return false;
        }
        fail(COHORT_ERR_INVALID_ARG,
             std::string("COHORT_BOOTSTRAP=") + how + " is neither pmix nor store");
    }
    const char *ns = getenv("PMIX_NAMESPACE");
    return ns == nullptr || *ns == '\0';
}

/* Where cohort's keys live in torch's store: under a prefix of their own (cohort's are
 * "cohort/<instance>/<rank>/card"), so that none meets one of torch's. */
const std::string kStorePrefix = "cohort-torch/";

/* The engine, started by the first group's creator (torch's default group: every rank, with
 * its world rank and size). The store bootstrap reads through a clone of the store (a
 * connection of its own where the store has connections, TCPStore), so that a blocking wait of
 * torch's on the caller's connection never holds up the progress thread's lookups. */
Engine &start_engine(const c10::intrusive_ptr<c10d::Store> &store, int world_rank,
                     int world_size)
{
    if (Engine::running()) {
        Engine &e = Engine::get();
        if (e.world_rank() != world_rank || e.world_size() != world_size) {
            fail(COHORT_ERR_INVALID_ARG,
                 "torch's rank " + std::to_string(world_rank) + " of " +
                     std::to_string(world_size) + " is not cohort's world rank " +
                     std::to_string(e.world_rank()) + " of " + std::to_string(e.world_size()) +
                     " (bootstrap " + e.bootstrap() + ")");
        }
        return e;
    }
    Engine::Bootstrap how;
    how.store = use_store();
    if (how.store) {
        if (!store) {
            fail(COHORT_ERR_INVALID_ARG, "the store bootstrap needs torch's store (none given)");
        }
        c10::intrusive_ptr<c10d::Store> own = store;
        try {
            own = store->clone();
        } catch (const std::exception &) {
            own = store; /* a store that cannot clone itself is shared */
        }
        how.rank = world_rank;
        how.size = world_size;
        how.put = [own](const std::string &key, const std::string &value) {
            own->set(kStorePrefix + key, std::vector<uint8_t>(value.begin(), value.end()));
        };
        how.get = [own](const std::string &key, std::string &value) {
            std::string k = kStorePrefix + key;
            if (!own->check({k})) {
                return false;
            }
            std::vector<uint8_t> v = own->get(k);
            value.assign(v.begin(), v.end());
            return true;
        };
    }
    Engine &e = Engine::start(how);
    if (!how.store && (e.world_rank() != world_rank || e.world_size() != world_size)) {
        fail(COHORT_ERR_INVALID_ARG,
             "torch's rank " + std::to_string(world_rank) + " of " + std::to_string(world_size) +
                 " is not PMIx rank " + std::to_string(e.world_rank()) + " of " +
                 std::to_string(e.world_size()) +
                 ": under mpirun/srun leave RANK/WORLD_SIZE to the launcher, or set "
                 "COHORT_BOOTSTRAP=store");
    }
    return e;
}

CohortBackend &cohort_of(const c10::intrusive_ptr<c10d::Backend> &b)
{
    auto *cb = dynamic_cast<CohortBackend *>(b.get());
    if (cb == nullptr) {
        fail(COHORT_ERR_INVALID_ARG, "not a cohort backend: " + b->getBackendName());
    }
    return *cb;
}

} // namespace cohort_torch

PYBIND11_MODULE(_cohort_torch, m)
{
    using namespace cohort_torch;
    namespace py = pybind11;
    using BackendPtr = c10::intrusive_ptr<c10d::Backend>;
    py::module_::import("torch.distributed");
    m.doc() = "CohortBackend: torch.distributed's backend \"cohort\" (a c10d::Backend) over "
              "libcohort";
    m.def(
        "create",
        [](const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
           std::vector<int64_t> global_ranks, int world_rank, int world_size,
           std::chrono::milliseconds timeout) -> BackendPtr {
            /* the progress thread may be running a Python callback of a Future */
            py::gil_scoped_release nogil;
            start_engine(store, world_rank, world_size);
            return c10::make_intrusive<CohortBackend>(rank, size, std::move(global_ranks),
                                                      timeout);
        },
        py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("global_ranks"),
        py::arg("world_rank"), py::arg("world_size"), py::arg("timeout"),
        "The backend of one group for this member (its group rank and size, its members' world "
        "ranks, empty for the world); the first call starts the process's cohort context.");
    m.def(
        "global_ranks", [](const BackendPtr &b) { return cohort_of(b).globalRanks(); },
        "The group's members' world ranks, in group rank order.");
    m.def(
        "cohort_group_id", [](const BackendPtr &b) { return cohort_of(b).groupId(); },
        "The cohort group's id (cohort_group_id).");
    m.def(
        "timeout_s", [](const BackendPtr &b) { return cohort_of(b).timeout().count() / 1000.0; },
        "The group's timeout (init_process_group's or new_group's), in seconds.");
    m.def(
        "abort_group", [](const BackendPtr &b) { cohort_of(b).abortGroup(); },
        py::call_guard<py::gil_scoped_release>(),
        "Revoke the group (cohort_group_abort): its operations fail with COHORT_ERR_REVOKED.");
    m.def(
        "bootstrap", [] { return std::string(Engine::get().bootstrap()); },
        py::call_guard<py::gil_scoped_release>(), "\"pmix\" or \"store\".");
    m.def(
        "world_rank", [] { return Engine::get().world_rank(); },
        py::call_guard<py::gil_scoped_release>());
    m.def(
        "world_size", [] { return Engine::get().world_size(); },
        py::call_guard<py::gil_scoped_release>());
    m.def(
        "start_pmix",
        [] {
            if (use_store()) {
                fail(COHORT_ERR_INVALID_ARG,
                     "no PMIx to start from (no PMIX_NAMESPACE, or COHORT_BOOTSTRAP=store): "
                     "set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (torchrun does)");
            }
            Engine &e = Engine::start(Engine::Bootstrap{});
            return std::make_pair(e.world_rank(), e.world_size());
        },
        py::call_guard<py::gil_scoped_release>(),
        "Start the context through PMIx now (before init_process_group): (rank, size).");
    m.def(
        "broadcast_world",
        [](at::Tensor t, int root) {
            Engine &e = Engine::get();
            auto b = c10::make_intrusive<CohortBackend>(e.world_rank(), e.world_size(),
                                                        std::vector<int64_t>{}, Ms(300000));
            std::vector<at::Tensor> v{t};
            c10d::BroadcastOptions o;
            o.rootRank = root;
            b->broadcast(v, o)->wait();
        },
        py::call_guard<py::gil_scoped_release>(),
        "Broadcast a CPU tensor over the world from root, before torch has a group.");
    m.def("use_store", &use_store,
          "Whether a context started now would bootstrap through torch's store (COHORT_BOOTSTRAP, "
          "else no PMIX_NAMESPACE) rather than PMIx.");
    m.def("running", &Engine::running);
    m.def("shutdown", &Engine::shutdown, py::call_guard<py::gil_scoped_release>());
}
