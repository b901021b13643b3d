/* The progress thread behind the torch backend (CohortBackend): one cohort context, and every
 * libcohort call on it made on that thread but group creation (call_here).
 * Callers hand it operations; it posts them in the order they came, tests their requests while
 * the callers compute, and runs each operation's finish step when its requests are done. No
 * torch here: this file builds in seconds, the torch one does not. */
#ifndef COHORT_TORCH_ENGINE_HPP
#define COHORT_TORCH_ENGINE_HPP

#include <cohort.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace cohort_torch
{

/* A cohort status as an exception: what failed and cohort's words for it. */
class Error : public std::runtime_error
{
  public:
    Error(cohort_status_t status, const std::string &what);
    cohort_status_t status() const
    {
        return status_;
    }

  private:
    cohort_status_t status_;
};

/* "COHORT_ERR_REVOKED" for -11: the name the Python package's exceptions carry too. */
const char *status_name(cohort_status_t status);
std::string status_text(cohort_status_t status, const std::string &what);

/* One operation: post() runs on the progress thread and posts zero or more requests into
 * reqs; finish() runs there once they are all done (or one failed: the others are then freed,
 * which cancels them), with the first error and its text, and for an operation of one receive
 * the group rank it came from (cohort_request_source; -1 otherwise). */
struct Op {
    std::string name;
    std::function<cohort_status_t(std::vector<cohort_request_t *> &reqs)> post;
    std::function<void(cohort_status_t status, const std::string &text, int source)> finish;
    std::vector<cohort_request_t *> reqs;
    size_t next = 0; /* requests before it are done */
};

class Engine
{
  public:
    /* How the engine's context finds its world. Pmix: cohort_init (mpirun, srun, prterun).
     * Store: cohort_init_exchange with rank and size given and a key-value store behind put
     * and get (torch's c10d Store under torchrun; engine.cpp keeps torch out of this file).
     * get must not wait: false for a key not there yet. */
    struct Bootstrap {
        bool store = false;
        int rank = -1, size = 0;
        std::function<void(const std::string &key, const std::string &value)> put;
        std::function<bool(const std::string &key, std::string &value)> get;
    };
    /* Start the process's engine (cohort_init or cohort_init_exchange on its thread) unless it
     * runs already; throws Error. */
    static Engine &start(const Bootstrap &how);
    /* The running engine; throws Error when start() was not called (or it was shut down). */
    static Engine &get();
    /* Whether get() has been called and the engine is still up. */
    static bool running();
    /* Finish every queued and posted operation, free what the context holds, cohort_finalize,
     * join the thread. Idempotent; later get() calls throw. */
    static void shutdown();

    /* Queue op; it is posted after every operation queued before it. Thread-safe, also from
     * the progress thread (a future's callback that starts another collective). */
    void submit(std::unique_ptr<Op> op);
    /* Run fn on the progress thread and wait for it. */
    void call(const std::function<void(cohort_context_t *)> &fn);
    /* Run fn on the calling thread, beside the progress thread, for a call that cohort.h lets
     * any thread make while another is inside a call on another group (it takes the context's
     * lock itself): group creation, which sends nothing. It saves the hand-over to the progress
     * thread and back, a wake of a thread that may be napping (about 0.7 ms per group on a
     * loaded machine: 14 of the 39 ms of Megatron's member-only setup at 8 ranks). */
    void call_here(const std::function<void(cohort_context_t *)> &fn)
    {
        fn(ctx_);
    }

    /* "pmix" or "store": how the context found its world. */
    const char *bootstrap() const
    {
        return how_.store ? "store" : "pmix";
    }
    int world_rank() const
    {
        return rank_;
    }
    int world_size() const
    {
        return size_;
    }
    bool on_thread() const
    {
        return std::this_thread::get_id() == thread_.get_id();
    }

  private:
    explicit Engine(const Bootstrap &how);
    ~Engine() = default;
    static cohort_status_t put_cb(void *arg, const char *key, const void *value, size_t len);
    static cohort_status_t get_cb(void *arg, const char *key, void **value, size_t *len);
    void loop();
    void stop();
    bool poll(Op &op);
    void complete(Op &op, cohort_status_t status);

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::unique_ptr<Op>> queue_;
    std::atomic<bool> queued_{false};
    bool stopping_ = false;
    std::vector<std::unique_ptr<Op>> active_; /* progress thread only */
    cohort_context_t *ctx_ = nullptr; /* set before start() returns; used by the progress thread
                                       * and by call_here */
    int rank_ = -1, size_ = 0;
    cohort_status_t init_status_ = COHORT_OK;
    /* The progress thread's settings, read from the environment by the constructor on the
     * caller's thread (engine.cpp says why): precise naps, polls before a nap, longest nap. */
    bool precise_ = false;
    int spin_polls_ = 0;
    int nap_max_us_ = 0;
    Bootstrap how_;
    std::thread thread_;
};

} // namespace cohort_torch

#endif
