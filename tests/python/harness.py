"""Shared helpers for the Python tests: checks that count, a visible SKIP, the verdict."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The package of the tree under test, unless PYTHONPATH already names one (installed copy).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

SKIP = 77  # automake's "skipped"


def need(*modules):
    """Exit with a visible SKIP line when a module is missing (numpy, torch)."""
    missing = []
    for m in modules:
        try:
            __import__(m)
        except ImportError:
            missing.append(m)
    if missing:
        if os.environ.get("PMIX_RANK", os.environ.get("RANK", "0")) == "0":
            print("SKIP: %s: %s not installed for %s (PYTHON=`scripts/python-env.sh` has %s)"
                  % (os.path.basename(sys.argv[0]), ", ".join(missing), sys.executable,
                     " ".join(missing)), flush=True)
        sys.exit(SKIP)


def need_backend():
    """import cohort.torch (which registers the backend), or a visible SKIP saying why it
    cannot (torch missing, or the extension not built for this torch): with PY_REQUIRE_ALL=1
    run.sh counts that SKIP as a failure."""
    need("torch")
    try:
        import cohort.torch as ct
    except ImportError as e:
        if os.environ.get("PMIX_RANK", os.environ.get("RANK", "0")) == "0":
            print("SKIP: %s: %s" % (os.path.basename(sys.argv[0]), e), flush=True)
        sys.exit(SKIP)
    return ct


class Checks:
    def __init__(self, name, rank):
        self.name = name
        self.rank = rank
        self.passed = 0
        self.failed = 0

    def __call__(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: %s: rank %d: %s" % (self.name, self.rank, what), flush=True)
        return cond

    def raises(self, exc, fn, what, status=None):
        try:
            fn()
        except exc as e:
            if status is not None and getattr(e, "status", None) != status:
                return self(False, "%s: raised %r with status %s, wanted %s"
                            % (what, e, getattr(e, "status", None), status))
            return self(True, what)
        except Exception as e:  # noqa: BLE001 - a wrong exception is a failure
            return self(False, "%s: raised %s: %s, wanted %s" % (what, type(e).__name__, e,
                                                                 exc.__name__))
        return self(False, "%s: did not raise" % what)

    def raises_status(self, fn, what, status):
        """fn raises cohort's error with this status: a CohortError carrying it (the package,
        the Python torch backend) or a RuntimeError whose text ends in its name in brackets
        (the C++ torch backend, whose errors reach Python through torch)."""
        from cohort import _status
        name = _status.NAMES[status]
        try:
            fn()
        except _status.CohortError as e:
            return self(e.status == status, "%s: raised %r, wanted %s" % (what, e, name))
        except RuntimeError as e:
            return self("[%s]" % name in str(e), "%s: raised %r, wanted %s" % (what, e, name))
        return self(False, "%s: did not raise" % what)

    def finish(self, world=None):
        """Every rank's verdict: the failure count summed over world (a cohort group) when
        given, so all ranks exit alike. Returns the exit status."""
        failed = self.failed
        if world is not None:
            import array
            a = array.array("q", [failed])
            world.allreduce(a)
            failed = a[0]
        if self.rank == 0:
            print("%s: %s (%d checks on rank 0%s)" % (
                self.name, "PASS" if failed == 0 else "FAIL, %d failures" % failed, self.passed,
                "" if world is None else ", %d ranks" % world.size), flush=True)
        return 0 if failed == 0 else 1

    def finish_dist(self, group=None):
        """finish(), the failures summed over a torch.distributed group (gloo's, so that a
        broken cohort backend cannot hide them)."""
        import torch
        import torch.distributed as dist
        failed = torch.tensor([self.failed])
        dist.all_reduce(failed, group=group)
        self.failed = int(failed.item())
        return self.finish()
