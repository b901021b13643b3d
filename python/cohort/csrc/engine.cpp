/* The progress thread: see engine.hpp. */
#include "engine.hpp"

#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>

namespace cohort_torch
{

namespace
{

Engine *the_engine = nullptr;
bool shut_down = false;
std::mutex the_engine_mu;

/* Polls that found nothing done before the thread starts to nap between polls, and the
 * longest nap (naps double from 1 us). Spinning (with sched_yield) can win where every rank
 * has a core of its own; where ranks outnumber cores, napping gives the core to the threads
 * that have work. Measured on this machine (2 shared cores, load ~20), dist.all_reduce of one
 * float: 4 ranks, spin 2000 / nap 100 us: 8.1 ms; spin 100 / nap 20: 7.0 ms; spin 0 / nap 20:
 * 0.41 ms (gloo 2.0-4.7 ms); 2 ranks, spin 0 / nap 20: 0.48 ms, spin 100: 0.76 ms. Knobs:
 * COHORT_TORCH_SPIN, COHORT_TORCH_NAP_US (this backend's own, read once at start). */
constexpr int kSpinPollsDefault = 0;
constexpr int kNapMaxUsDefault = 20;
/* Those naps are all about 50 us longer than asked: Linux's default timer slack. Where this
 * node's ranks do not outnumber the cores this process may run on, the thread asks for a 1 us
 * slack and naps up to 64 us, so a nap lasts what it asks and the first polls after a post come
 * soon (`python3 -m cohort.bench torch --ranks 2 --repeats 5..7`, per call, median of the
 * blocks, three batches at load 5-12 against the default slack: 1 float 32.6, 31.1, 50.2 us vs
 * 67.0, 149.6, 118.2; 64 KiB 54.3, 291.9, 94.7 us vs 114.0, 179.4, 134.2). Where they outnumber
 * them, precise wakes only take the cores from the threads with work (4 ranks on 2 cores: 1
 * float 221, 570, 416 us vs 175, 301, 229), so the default slack and naps stay. */
constexpr int kNapMaxUsPrecise = 64;

/* This node's rank count, as torchrun (LOCAL_WORLD_SIZE) or Open MPI says; 0 when unknown. */
int local_ranks()
{
    for (const char *name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
        const char *v = getenv(name);
        int n = v != nullptr ? atoi(v) : 0;
        if (n > 0) {
            return n;
        }
    }
    return 0;
}

/* Whether this node's ranks fit its cores: then naps are made precise (above). */
bool ranks_fit_cores()
{
    cpu_set_t set;
    int local = local_ranks();
    CPU_ZERO(&set);
    if (local == 0 || sched_getaffinity(0, sizeof set, &set) != 0) {
        return false;
    }
    return local <= CPU_COUNT(&set);
}

int env_int(const char *name, int def, int lo, int hi)
{
    const char *v = getenv(name);
    char *end = nullptr;
    long n = v != nullptr ? strtol(v, &end, 10) : def;
    if (v != nullptr && (*v == '\0' || *end != '\0' || n < lo || n > hi)) {
        fprintf(stderr, "cohort torch backend: %s=%s is not a number in %d..%d: using %d\n", name,
                v, lo, hi, def);
        return def;
    }
    return (int)n;
}

} // namespace

Error::Error(cohort_status_t status, const std::string &what)
    : std::runtime_error(status_text(status, what)), status_(status)
{
}

const char *status_name(cohort_status_t status)
{
    switch (status) {
    case COHORT_OK:
        return "COHORT_OK";
    case COHORT_INPROGRESS:
        return "COHORT_INPROGRESS";
    case COHORT_ERR_INVALID_ARG:
        return "COHORT_ERR_INVALID_ARG";
    case COHORT_ERR_NO_MEMORY:
        return "COHORT_ERR_NO_MEMORY";
    case COHORT_ERR_NOT_MEMBER:
        return "COHORT_ERR_NOT_MEMBER";
    case COHORT_ERR_UNSUPPORTED:
        return "COHORT_ERR_UNSUPPORTED";
    case COHORT_ERR_PMIX:
        return "COHORT_ERR_PMIX";
    case COHORT_ERR_UCX:
        return "COHORT_ERR_UCX";
    case COHORT_ERR_TIMEOUT:
        return "COHORT_ERR_TIMEOUT";
    case COHORT_ERR_PEER_FAILED:
        return "COHORT_ERR_PEER_FAILED";
    case COHORT_ERR_MISMATCH:
        return "COHORT_ERR_MISMATCH";
    case COHORT_ERR_CUDA:
        return "COHORT_ERR_CUDA";
    case COHORT_ERR_REVOKED:
        return "COHORT_ERR_REVOKED";
    case COHORT_ERR_CANCELED:
        return "COHORT_ERR_CANCELED";
    }
    return "COHORT_ERR_UNKNOWN";
}

/* The one format every error of the backend has: the Python side reads the status back from
 * the bracket (cohort/torch.py maps it onto cohort.CohortError's subclasses). */
std::string status_text(cohort_status_t status, const std::string &what)
{
    return "cohort backend: " + what + ": " + cohort_strerror(status) + " [" + status_name(status) +
           "]";
}

Engine &Engine::start(const Bootstrap &how)
{
    std::lock_guard<std::mutex> lock(the_engine_mu);
    if (the_engine == nullptr) {
        if (shut_down) {
            throw Error(COHORT_ERR_INVALID_ARG, "the backend was shut down (process exit)");
        }
        auto *e = new Engine(how);
        if (e->init_status_ != COHORT_OK) {
            cohort_status_t st = e->init_status_;
            e->thread_.join();
            delete e;
            throw Error(st, how.store ? "cohort_init_exchange (bootstrap through torch's store)"
                                      : "cohort_init (bootstrap through PMIx)");
        }
        the_engine = e;
    }
    return *the_engine;
}

Engine &Engine::get()
{
    std::lock_guard<std::mutex> lock(the_engine_mu);
    if (the_engine == nullptr) {
        throw Error(COHORT_ERR_INVALID_ARG, shut_down ? "the backend was shut down (process exit)"
                                                      : "the backend was not started");
    }
    return *the_engine;
}

/* The store's callbacks (cohort.h: cohort_exchange_t), on the progress thread inside a cohort
 * call. An exception from the store (a closed connection) is a failed put or get. */
cohort_status_t Engine::put_cb(void *arg, const char *key, const void *value, size_t len)
{
    auto *e = static_cast<Engine *>(arg);
    try {
        e->how_.put(key, std::string(static_cast<const char *>(value), len));
        return COHORT_OK;
    } catch (const std::exception &x) {
        fprintf(stderr, "cohort torch backend: putting %s into torch's store: %s\n", key, x.what());
        return COHORT_ERR_PEER_FAILED;
    }
}

cohort_status_t Engine::get_cb(void *arg, const char *key, void **value, size_t *len)
{
    auto *e = static_cast<Engine *>(arg);
    std::string v;
    try {
        if (!e->how_.get(key, v)) {
            return COHORT_INPROGRESS;
        }
    } catch (const std::exception &x) {
        fprintf(stderr, "cohort torch backend: reading %s from torch's store: %s\n", key, x.what());
        return COHORT_ERR_PEER_FAILED;
    }
    void *copy = malloc(v.size() ? v.size() : 1);
    if (copy == nullptr) {
        return COHORT_ERR_NO_MEMORY;
    }
    memcpy(copy, v.data(), v.size());
    *value = copy;
    *len = v.size();
    return COHORT_OK;
}

bool Engine::running()
{
    std::lock_guard<std::mutex> lock(the_engine_mu);
    return the_engine != nullptr;
}

void Engine::shutdown()
{
    Engine *e;
    {
        std::lock_guard<std::mutex> lock(the_engine_mu);
        e = the_engine;
        the_engine = nullptr;
        shut_down = true;
    }
    if (e != nullptr) {
        e->stop();
        delete e;
    }
}

Engine::Engine(const Bootstrap &how) : how_(how)
{
    /* Read here, on the caller's thread, before the progress thread exists: getenv on that
     * thread raced the program's own changes to the environment (os.environ[...] = ... in
     * Python, setenv in C), which may move the environment's array while getenv walks it (seen
     * in CI: SIGSEGV inside getenv on the progress thread, test_torch.py at 4 ranks).
     * cohort_init reads the environment on the progress thread while this one waits for it. */
    precise_ = ranks_fit_cores();
    spin_polls_ = env_int("COHORT_TORCH_SPIN", kSpinPollsDefault, 0, 1 << 30);
    nap_max_us_ =
        env_int("COHORT_TORCH_NAP_US", precise_ ? kNapMaxUsPrecise : kNapMaxUsDefault, 1, 100000);
    std::promise<void> started;
    thread_ = std::thread([this, &started] {
        if (how_.store) {
            cohort_exchange_t ex = {how_.rank, how_.size, put_cb, get_cb, this};
            init_status_ = cohort_init_exchange(&ex, &ctx_);
        } else {
            init_status_ = cohort_init(&ctx_);
        }
        if (init_status_ == COHORT_OK) {
            rank_ = cohort_world_rank(ctx_);
            size_ = cohort_world_size(ctx_);
        }
        started.set_value();
        if (init_status_ == COHORT_OK) {
            loop();
        }
    });
    started.get_future().wait();
}

void Engine::stop()
{
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) {
        thread_.join();
    }
}

void Engine::submit(std::unique_ptr<Op> op)
{
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) {
            throw Error(COHORT_ERR_INVALID_ARG, op->name + ": the backend is shutting down");
        }
        queue_.push_back(std::move(op));
        queued_.store(true, std::memory_order_release);
    }
    cv_.notify_one();
}

void Engine::call(const std::function<void(cohort_context_t *)> &fn)
{
    if (on_thread()) {
        fn(ctx_);
        return;
    }
    std::promise<void> done;
    auto op = std::make_unique<Op>();
    op->name = "call";
    op->post = [this, &fn, &done](std::vector<cohort_request_t *> &) {
        try {
            fn(ctx_);
            done.set_value();
        } catch (...) {
            done.set_exception(std::current_exception());
        }
        return COHORT_OK;
    };
    op->finish = [](cohort_status_t, const std::string &, int) {};
    submit(std::move(op));
    done.get_future().get();
}

/* Whether op is finished: its requests are tested in order, each once per pass. */
bool Engine::poll(Op &op)
{
    while (op.next < op.reqs.size()) {
        int done = 0;
        cohort_status_t st = cohort_test(op.reqs[op.next], &done);
        if (!done && st == COHORT_OK) {
            return false;
        }
        if (st != COHORT_OK) {
            complete(op, st);
            return true;
        }
        op.next++;
    }
    complete(op, COHORT_OK);
    return true;
}

void Engine::complete(Op &op, cohort_status_t status)
{
    int source =
        status == COHORT_OK && op.reqs.size() == 1 ? cohort_request_source(op.reqs[0]) : -1;
    for (cohort_request_t *r : op.reqs) {
        cohort_request_free(r); /* cancels the unfinished ones of a failed operation */
    }
    op.reqs.clear();
    std::string text = status == COHORT_OK ? std::string() : status_text(status, op.name);
    try {
        op.finish(status, text, source);
    } catch (...) {
        /* finish completes a Work: an exception there has nobody to go to */
    }
}

void Engine::loop()
{
    if (precise_) {
        (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    }
    const int spin_polls = spin_polls_;
    const useconds_t nap_max = (useconds_t)nap_max_us_;
    int idle = 0;
    useconds_t nap = 1;
    for (;;) {
        std::deque<std::unique_ptr<Op>> fresh;
        if (active_.empty() || queued_.load(std::memory_order_acquire)) {
            std::unique_lock<std::mutex> lock(mu_);
            if (active_.empty()) {
                cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            }
            fresh.swap(queue_);
            queued_.store(false, std::memory_order_relaxed);
            if (stopping_) {
                /* process exit: what is still queued or in flight fails; finalize cancels */
                for (auto &op : active_) {
                    complete(*op, COHORT_ERR_REVOKED);
                }
                for (auto &op : fresh) {
                    complete(*op, COHORT_ERR_REVOKED);
                }
                active_.clear();
                break;
            }
        }
        for (auto &op : fresh) {
            cohort_status_t st = op->post(op->reqs);
            if (st != COHORT_OK) {
                complete(*op, st);
            } else {
                active_.push_back(std::move(op));
            }
        }
        bool progressed = !fresh.empty();
        for (size_t i = 0; i < active_.size();) {
            if (poll(*active_[i])) {
                active_.erase(active_.begin() + (long)i);
                progressed = true;
            } else {
                i++;
            }
        }
        if (progressed) {
            idle = 0;
            nap = 1;
        } else if (++idle < spin_polls) {
            sched_yield();
        } else {
            usleep(nap);
            nap = nap * 2 > nap_max ? nap_max : nap * 2;
        }
    }
    cohort_finalize(ctx_);
    ctx_ = nullptr;
}

} // namespace cohort_torch
