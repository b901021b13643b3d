#!/usr/bin/env python3
"""torch's own backend suite on backend "cohort", with gloo beside it in the same run.

The suite is the installed torch's torch.testing._internal.distributed.distributed_test
(DistributedTest._DistTestBase, about 285 tests): every test is a method that W processes run
after init_process_group(backend, file:// store), W = WORLD_SIZE. torch drives it from
test/distributed/test_distributed_spawn.py with BACKEND, WORLD_SIZE and TEMP_DIR set; this
runner is our own driver of the same classes:

  python run_torch_suite.py                      # the quick slice, cohort, W=2
  python run_torch_suite.py --select mpi         # ... chosen as for MPI: CPU all_to_all
  python run_torch_suite.py --full               # every test, cohort and gloo, W=2 and 4
  TEST_FULL=1 python run_torch_suite.py          # the same (scripts/test.sh --full)
  python run_torch_suite.py --backends cohort,gloo --world-sizes 3 test_all_reduce_sum

- Processes are forked from a worker that imported torch once (not spawned: a fresh torch
  import per rank per test would be most of the time on 2 cores); each test's W processes
  bootstrap through the FileStore (PMIx's variables are removed: no launcher here).
- Which tests run is decided as for gloo (--select; mpi and own: docs/torch.md): the suite's
  decorators read BACKEND at import, so the worker imports it with BACKEND=gloo, then names the
  backend under test in the module (distributed_test.BACKEND), which init_process_group and the
  tests' own checks read. A test gloo runs on CPU is then run on cohort too, and a failure is a
  failure unless COHORT_SKIP below says why.
- Every test is bounded (--timeout, torch's own per-test bound, which terminates the ranks);
  a worker that stops reporting for longer is killed and the next worker goes on after it.
- The result: passed / failed (an assertion or an error, either) / skipped per backend and world
  size, every failure with its reason, grouped by reason; then each test gloo passes and cohort does not (a bug unless
  COHORT_SKIP says why): the exit status is 1 if there is one, or if a quick-slice test fails.

expecttest (which torch's testing modules import and the torch wheel does not bring) comes from
tests/python/suite-requirements.txt, pinned with its hash, installed once beside the virtual
environment (see _extra_site)."""
import argparse
import collections
import hashlib
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TREE_PYTHON = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")

# The quick slice (tests/python/run.sh, scripts/test.sh without --full): cohort alone at W=2,
# every collective and point-to-point call once or more (default, full-group and nonblocking
# forms, complex, coalesced, sparse, objects, the argument checks, futures, profiler events,
# monitored_barrier) and DDP on CPU; each test about 0.3 s. --full (TEST_FULL=1) runs every
# test of the suite on cohort and gloo at W=2 and 4.
QUICK = [
    "test_get_backend", "test_get_rank_size_group", "test_destroy_group",
    "test_barrier_full_group", "test_barrier_timeout_full_group", "test_barrier_timeout_global",
    "test_send_recv",
    "test_send_recv_any_source", "test_send_recv_with_tag", "test_isend", "test_irecv",
    "test_batch_isend_irecv_gloo", "test_batch_isend_irecv_gloo_tags", "test_broadcast",
    "test_broadcast_full_group", "test_all_reduce_sum", "test_all_reduce_max",
    "test_all_reduce_product", "test_all_reduce_full_group_min", "test_all_reduce_sum_async",
    "test_all_reduce_sum_complex", "test_all_reduce_complex_unsupported_ops",
    "test_all_reduce_coalesced_sum", "test_all_reduce_coalesced_max_complex_unsupported",
    "test_sparse_all_reduce_sum", "test_reduce_sum", "test_reduce_full_group_max",
    "test_all_gather", "test_all_gather_complex", "test_all_gather_coalesced_simple",
    "test_all_gather_coalesced_with_empty", "test_all_gather_object_default_pg", "test_gather",
    "test_gather_checks", "test_scatter", "test_scatter_checks", "test_scatter_object_list",
    "test_get_future", "test_monitored_barrier_gloo", "test_monitored_barrier_gloo_rank_0_timeout",
    "test_send_recv_any_source_torch_profiler",
    "test_send_recv_torch_profiler", "test_DistributedDataParallelCPU",
    "test_accumulate_gradients_no_sync_allreduce_hook", "test_static_graph_api_cpu",
]
# The quick slice chosen as for MPI (--select mpi): the CPU all_to_all tests, which torch runs
# for MPI alone (gloo has no CPU all_to_all of lists).
QUICK_MPI = [
    "test_all_to_all", "test_all_to_all_complex", "test_all_to_all_single_equal_split",
    "test_all_to_all_single_unequal_split", "test_all_to_all_single_unequal_split_complex",
]

# Tests that gloo runs on CPU and cohort does not pass, each with why: what the backend lacks
# by design, or what the test checks of torch's handling of a backend named gloo. Run all the
# same (their results are printed); only a failure of a test not named here fails the runner.
COHORT_SKIP = {
    "test_ddp_logging_data_cpu":
        "torch's DDP logger names every third-party backend 'custom' (c10d::ProcessGroup::"
        "getBackendName of BackendType::CUSTOM, torch's object, not the backend's); the test "
        "wants dist.get_backend()'s 'cohort'",
}

# Tests whose body (not their decorators) chooses what to run by the backend's name and builds
# nothing for a name it does not know (test_accumulate_gradients_*: its model exists for "gloo"
# and "mpi" only). Their ranks make the process group with the backend under test, check that
# dist.get_backend() says so, and then the body reads distributed_test.BACKEND == "gloo": the
# CPU path, on cohort.
BODY_AS_GLOO = {
    "test_accumulate_gradients_no_sync", "test_accumulate_gradients_no_sync_allreduce_hook",
    "test_accumulate_gradients_no_sync_allreduce_with_then_hook",
    "test_accumulate_gradients_no_sync_grad_is_view",
}

PMIX_VARS = ("PMIX_NAMESPACE", "PMIX_RANK", "PMIX_SERVER_URI41", "PMIX_SERVER_URI4",
             "PMIX_SERVER_URI3", "PMIX_SERVER_URI2", "PMIX_SERVER_URI21", "OMPI_COMM_WORLD_SIZE",
             "OMPI_COMM_WORLD_RANK")


def _extra_site(py):
    """A directory with the pinned expecttest for py, installed once (pip install --target,
    --require-hashes) under the virtual environment's cache directory, named by the hash of the
    requirements file and py; returns it, or None with the reason printed."""
    req = os.path.join(HERE, "suite-requirements.txt")
    with open(req, "rb") as f:
        h = hashlib.sha256(f.read() + py.encode()).hexdigest()[:16]
    base = os.environ.get("COHORT_PY_CACHE", "/var/cache/cohort-py")
    if not os.access(base, os.W_OK):
        base = tempfile.gettempdir()
    site = os.path.join(base, "suite-" + h)
    if os.path.isdir(site):
        return site
    tmp = "%s.tmp.%d" % (site, os.getpid())
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "--no-deps", "--require-hashes", "--target", tmp, "-r", req],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print("run_torch_suite: pip could not install %s:\n%s" % (req, r.stdout))
        return None
    try:
        os.rename(tmp, site)
    except OSError:  # another copy made it meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    return site


# ---------------------------------------------------------------------------------------------
# The worker: one backend, one world size, tests run one after the other; prints
# "START name" and "RESULT {json}" lines on its stdout for the parent.

def _reason_of(text):
    """The line that says why: the last 'SomeError: ...' or 'AssertionError' line of the
    innermost traceback in text (a rank's traceback as torch pipes it up), else its last line."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^[\w.]*(Error|Exception|Timeout|Interrupt)\b.*", ln) or \
                ln.startswith("Process ") and "timed out" in ln:
            return ln[:300]
    return lines[-1][:300] if lines else "(no message)"


def worker(backend, world_size, tests, log_dir, timeout, select):
    os.environ["WORLD_SIZE"] = str(world_size)
    # The decorators decide as for the backend named by --select (module docstring).
    os.environ["BACKEND"] = backend if select == "own" else select
    os.environ["DISTRIBUTED_TESTS_DEFAULT_TIMEOUT"] = str(timeout)
    # The tests make their groups through a store file of their own; INIT_METHOD is the one
    # test_barrier_timeout_global initializes the default group with again (file://, as torch
    # runs gloo's suite too: a tcp:// or env:// store is skipped as racy there), removed
    # before every test so that no test finds another's keys.
    init_file = os.path.join(tempfile.gettempdir(), "init-%s-w%d" % (backend, world_size))
    os.environ["INIT_METHOD"] = "file://" + init_file
    os.environ.setdefault("TEMP_DIR", tempfile.mkdtemp(prefix="torch-suite-"))
    os.makedirs(os.path.join(os.environ["TEMP_DIR"], "barrier"), exist_ok=True)
    import unittest

    import torch
    import torch.multiprocessing as tmp
    if backend == "cohort":
        import cohort.torch  # noqa: F401 - registers the backend before any fork
    from torch.testing._internal import common_distributed as cd
    from torch.testing._internal.distributed import distributed_test as dt
    dt.BACKEND = backend
    # The bodies check the profiler's events of an operation ("<backend>:all_reduce", its
    # input shapes, async) only for the backends in these lists; cohort records one per
    # operation (docs/torch.md), so it is held to the same checks as gloo.
    for allow in (dt.PROFILING_SUPPORTED_BACKENDS, dt.SEND_RECV_PROFILING_SUPPORTED_BACKENDS):
        if backend not in allow:
            allow.append(backend)
    if select == "own":
        # torch's hook for a third-party backend: require_backend_is_available() lets a
        # backend in this set through.
        cd.DistTestCases.backend_feature["plugin"].add(backend)

    class Suite(dt.TestDistBackend, dt.DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            self._start_processes(tmp.get_context("fork").Process)

        def run_test(self, test_name, pipe):
            # In the rank, after init_process_group: the group is the backend under test.
            got = torch.distributed.get_backend()
            if got != backend:
                raise RuntimeError("run_torch_suite: the default group is %s, not %s"
                                   % (got, backend))
            if test_name in BODY_AS_GLOO and select != "own":
                dt.BACKEND = select
            super().run_test(test_name, pipe)

        @classmethod
        def _run(cls, rank, test_name, file_name, pipe, **kwargs):
            # Each rank's output to its own log: the reason of a skip taken inside the ranks
            # is only logged there, and W ranks' torch warnings would bury the summary.
            path = os.path.join(log_dir, "%s.%s.w%d.r%d.log" % (test_name, backend,
                                                               world_size, rank))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
            import logging
            logging.getLogger(cd.__name__).setLevel(logging.INFO)
            super()._run(rank, test_name, file_name, pipe, **kwargs)

    for name in tests:
        if not hasattr(Suite, name):
            print("RESULT " + json.dumps({"test": name, "outcome": "error",
                                          "reason": "no such test in this torch's suite"}),
                  flush=True)
            continue
        if os.path.exists(init_file):
            os.unlink(init_file)
        print("START " + name, flush=True)
        t0 = time.time()
        result = unittest.TestResult()
        Suite(name).run(result)
        out = {"test": name, "seconds": round(time.time() - t0, 2)}
        if result.skipped:
            out["outcome"] = "skipped"
            out["reason"] = result.skipped[0][1]
            if out["reason"].startswith("Test skipped at subprocess level"):
                out["reason"] = _subprocess_skip_reason(log_dir, name, backend, world_size)
        elif result.failures or result.errors:
            out["outcome"] = "failed"
            out["reason"] = _reason_of((result.failures or result.errors)[0][1])
        else:
            out["outcome"] = "passed"
        print("RESULT " + json.dumps(out), flush=True)
    torch.distributed.is_available()  # (torch stays imported until the end)


def _subprocess_skip_reason(log_dir, name, backend, world_size):
    path = os.path.join(log_dir, "%s.%s.w%d.r0.log" % (name, backend, world_size))
    try:
        with open(path) as f:
            m = re.findall(r"for following reason: (.*)", f.read())
    except OSError:
        m = []
    return m[-1] if m else "skipped inside the ranks (no reason logged)"


# ---------------------------------------------------------------------------------------------
# The parent: one worker per backend and world size, restarted after a test it had to kill.

def run_backend(py, env, backend, world_size, tests, log_dir, timeout, chosen_as):
    """{test: result dict} for every test, in order."""
    results = collections.OrderedDict()
    todo = list(tests)
    while todo:
        cmd = [py, os.path.abspath(__file__), "--worker", backend, str(world_size),
               "--log-dir", log_dir, "--timeout", str(timeout), "--select", chosen_as] + todo
        wlog = open(os.path.join(log_dir, "worker.%s.w%d.log" % (backend, world_size)), "a")
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=wlog, env=env, text=True,
                             bufsize=1, start_new_session=True)
        current, last, killed, before = None, time.time(), False, len(results)
        # torch's own bound terminates a test's ranks after timeout s; the worker gets that
        # plus its import and the join's own slack before it is called hung.
        bound = timeout + 90
        while True:
            r, _, _ = select.select([p.stdout], [], [], 5)
            if r:
                line = p.stdout.readline()
                if not line:
                    break
                last = time.time()
                if line.startswith("START "):
                    current = line[6:].strip()
                elif line.startswith("RESULT "):
                    res = json.loads(line[7:])
                    results[res["test"]] = res
                    current = None
                    _progress(backend, world_size, res)
            elif time.time() - last > bound:
                os.killpg(p.pid, 9)  # the worker and the ranks it forked (its session)
                killed = True
                break
        p.wait()
        wlog.close()
        if current is not None and current not in results:
            results[current] = {"test": current, "outcome": "failed", "seconds": bound,
                                "reason": "hung: the runner killed its worker after %d s "
                                "without a result" % bound}
            _progress(backend, world_size, results[current])
        elif len(results) == before:
            # Nothing reported at all (killed or dead before its first test): no retry.
            why = ("hung: the worker reported nothing for %d s (killed) before it" % bound
                   if killed else "the worker exited %d before it" % p.returncode)
            for t in todo:
                results[t] = {"test": t, "outcome": "failed",
                              "reason": "%s (see %s)" % (why, wlog.name)}
        todo = [t for t in tests if t not in results]
    return results


def _progress(backend, world_size, res):
    if os.environ.get("SUITE_VERBOSE", "0") == "1" or res["outcome"] == "failed":
        print("  %s W=%d %-60s %s%s" % (backend, world_size, res["test"], res["outcome"],
                                        ": " + res["reason"] if res["outcome"] == "failed"
                                        else ""), flush=True)


def summarize(all_results, backends, world_sizes, quick):
    bad = 0
    for ws in world_sizes:
        for b in backends:
            res = all_results[(b, ws)]
            counts = collections.Counter(r["outcome"] for r in res.values())
            secs = sum(r.get("seconds", 0) for r in res.values())
            print("== %s W=%d: %d passed, %d failed, %d skipped (of %d; %.0f s)"
                  % (b, ws, counts["passed"], counts["failed"], counts["skipped"], len(res),
                     secs))
            groups = collections.defaultdict(list)
            for r in res.values():
                if r["outcome"] == "failed":
                    groups[_normalize(r["reason"])].append(r["test"])
            for reason, names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
                print("   failed (%d): %s\n      %s" % (len(names), reason, " ".join(names)))
            if os.environ.get("SUITE_SKIPS", "0") == "1":
                sk = collections.defaultdict(list)
                for r in res.values():
                    if r["outcome"] == "skipped":
                        sk[_normalize(r["reason"])].append(r["test"])
                for reason, names in sorted(sk.items(), key=lambda kv: -len(kv[1])):
                    print("   skipped (%d): %s\n      %s" % (len(names), reason,
                                                            " ".join(names)))
        if "cohort" in backends and "gloo" in backends:
            c, g = all_results[("cohort", ws)], all_results[("gloo", ws)]
            gap = [t for t, r in g.items() if r["outcome"] == "passed"
                   and c.get(t, {}).get("outcome") != "passed"]
            listed = [t for t in gap if t in COHORT_SKIP]
            unlisted = [t for t in gap if t not in COHORT_SKIP]
            print("== W=%d: gloo passes %d that cohort does not: %d listed in COHORT_SKIP, %d "
                  "not" % (ws, len(gap), len(listed), len(unlisted)))
            for t in unlisted:
                print("   NOT LISTED: %s: cohort %s: %s" % (t, c[t]["outcome"],
                                                          c[t].get("reason", "")))
            bad += len(unlisted)
        if "cohort" in backends:
            # With cohort alone, a quick-slice test that fails (not one listed) is a failure.
            c = all_results[("cohort", ws)]
            if "gloo" not in backends or quick:
                bad += len([t for t, r in c.items() if r["outcome"] == "failed"
                            and t not in COHORT_SKIP and
                            ("gloo" not in backends or
                             all_results[("gloo", ws)][t]["outcome"] != "failed")])
    return bad


def _normalize(reason):
    """Reasons that differ only in numbers, addresses or ranks group together."""
    return re.sub(r"0x[0-9a-f]+|\d+(\.\d+)?", "N", reason)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", nargs=2, metavar=("BACKEND", "W"))
    # TEST_FULL=1 (scripts/test.sh --full) makes --full the default, SUITE_SELECT --select's.
    full = os.environ.get("TEST_FULL", "0") == "1"
    ap.add_argument("--backends", default="cohort,gloo" if full else "cohort")
    # Chosen as for MPI, the group tests run (torch skips them below 8 ranks for any backend
    # but MPI) and need ranks 1 and 2: 4 ranks, not 2.
    mpi = os.environ.get("SUITE_SELECT") == "mpi" or "mpi" in sys.argv
    ap.add_argument("--world-sizes", default=("4" if mpi else "2,4") if full else "2")
    ap.add_argument("--full", action="store_true", default=full, help="every test of the suite")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("SUITE_TIMEOUT", "60")),
                    help="seconds per test (torch terminates its ranks after)")
    ap.add_argument("--log-dir", default=None)
    ap.add_argument("--select", default=os.environ.get("SUITE_SELECT", "gloo"),
                    choices=("gloo", "mpi", "own"),
                    help="the suite's decorators decide as for this backend name (own: the "
                    "name under test, torch's choice for a third-party backend)")
    ap.add_argument("--list", action="store_true", help="print the tests that would run")
    ap.add_argument("tests", nargs="*")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], int(a.worker[1]), a.tests, a.log_dir, a.timeout, a.select)
        return 0
    py = sys.executable
    env = {k: v for k, v in os.environ.items() if k not in PMIX_VARS}
    env["PYTHONPATH"] = os.pathsep.join([TREE_PYTHON] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    # No torch or no backend for it: a visible SKIP (exit 77), as the other tests here say it
    # (tests/python/run.sh counts it a failure with PY_REQUIRE_ALL=1).
    r = subprocess.run([py, "-c", "import torch.distributed, cohort.torch"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print("SKIP: run_torch_suite.py: %s" % (r.stdout.strip().splitlines() or ["?"])[-1])
        return 77
    site = _extra_site(py)
    if site is None:
        return 1
    env["PYTHONPATH"] = site + os.pathsep + env["PYTHONPATH"]
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("COHORT_PLUGIN_PATH",
                   os.path.join(os.path.dirname(os.path.dirname(HERE)), ".libs"))
    if a.tests:
        tests = a.tests
    elif a.full:
        out = subprocess.run([py, "-c", "import os; os.environ.update(BACKEND='gloo', "
                              "WORLD_SIZE='2', TEMP_DIR='/tmp'); from torch.testing._internal"
                              ".distributed.distributed_test import DistributedTest as D; "
                              "print(' '.join(sorted(m for m in dir(D._DistTestBase) "
                              "if m.startswith('test_'))))"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, check=True)
        tests = out.stdout.split()
    else:
        tests = QUICK_MPI if a.select == "mpi" else QUICK
    if a.list:
        print("\n".join(tests))
        return 0
    log_dir = a.log_dir or tempfile.mkdtemp(prefix="torch-suite-logs-")
    # What torch's test classes make (a FileStore file per test, TEMP_DIR trees) goes into one
    # scratch directory, removed at the end.
    scratch = tempfile.mkdtemp(prefix="torch-suite-tmp-")
    env["TMPDIR"] = scratch
    os.makedirs(log_dir, exist_ok=True)
    backends = a.backends.split(",")
    world_sizes = [int(w) for w in a.world_sizes.split(",")]
    print("torch suite: %d tests, backends %s, W=%s, %d s per test, chosen as for %s, logs in "
          "%s" % (len(tests), ",".join(backends), a.world_sizes, a.timeout, a.select, log_dir),
          flush=True)
    all_results = {}
    t0 = time.time()
    for ws in world_sizes:
        for b in backends:
            env_b = dict(env, TEMP_DIR=tempfile.mkdtemp(prefix="temp-dir-%s-" % b,
                                                        dir=scratch))
            all_results[(b, ws)] = run_backend(py, env_b, b, ws, tests, log_dir, a.timeout,
                                               a.select)
    with open(os.path.join(log_dir, "results.json"), "w") as f:
        json.dump({"%s.w%d" % k: v for k, v in all_results.items()}, f, indent=1)
    bad = summarize(all_results, backends, world_sizes, not a.full and not a.tests)
    shutil.rmtree(scratch, ignore_errors=True)
    if not bad and not a.log_dir and os.environ.get("SUITE_KEEP", "0") != "1":
        shutil.rmtree(log_dir, ignore_errors=True)
        log_dir = "(removed: all well; SUITE_KEEP=1 keeps them)"
    print("torch suite: %.0f s wall; %s; logs %s" % (time.time() - t0, "FAILED (%d)" % bad
                                                     if bad else "ok", log_dir))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
