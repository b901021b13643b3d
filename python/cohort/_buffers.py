"""Turning Python objects into (address, element count, cohort dtype) for the C calls.

Accepted: anything with the buffer protocol (numpy arrays, bytearray, bytes for sending,
memoryview, array.array), C-contiguous; and torch tensors (CPU or CUDA, contiguous). A buffer is held
(the exporter cannot resize or free it) until the call or request that uses it completes.
"""
import ctypes
import sys

from . import _status

# cohort_dtype_t values and sizes
INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = range(10)
DTYPE_NAMES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
               "float32", "float64"]
DTYPE_SIZE = [1, 1, 4, 4, 8, 8, 2, 2, 4, 8]
FLOAT_DTYPES = (FLOAT16, BFLOAT16, FLOAT32, FLOAT64)

SUM, PROD, MIN, MAX, AVG = range(5)
OP_NAMES = ["sum", "prod", "min", "max", "avg"]


def _bad(msg):
    return _status.InvalidArgument(_status.ERR_INVALID_ARG, msg)


def as_dtype(dt):
    """A cohort dtype from an int, a name ("float32", "bf16"), a numpy dtype or a torch dtype."""
    if dt is None:
        return None
    if isinstance(dt, int) and not isinstance(dt, bool):
        if 0 <= dt < len(DTYPE_NAMES):
            return dt
        raise _bad("unknown cohort dtype %d" % dt)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dt, torch.dtype):
        return _torch_dtype(dt)
    name = dt if isinstance(dt, str) else None
    np = sys.modules.get("numpy")
    if name is None and np is not None:
        try:
            name = np.dtype(dt).name  # np.float16, np.dtype("f4"), ...
        except TypeError:
            pass
    if name is None:
        name = getattr(dt, "name", None) or str(dt)
    name = name.lower().replace("torch.", "")
    aliases = {"bf16": "bfloat16", "half": "float16", "fp16": "float16", "float": "float32",
               "double": "float64", "fp32": "float32", "fp64": "float64"}
    name = aliases.get(name, name)
    if name in DTYPE_NAMES:
        return DTYPE_NAMES.index(name)
    raise _bad("dtype %r has no cohort equivalent (cohort has %s)" % (dt, ", ".join(DTYPE_NAMES)))


def as_op(op):
    if isinstance(op, int) and not isinstance(op, bool):
        if 0 <= op < len(OP_NAMES):
            return op
    elif isinstance(op, str) and op.lower() in OP_NAMES + ["product"]:
        return OP_NAMES.index("prod" if op.lower() == "product" else op.lower())
    raise _bad("unknown reduction op %r (cohort has %s)" % (op, ", ".join(OP_NAMES)))


def _torch_dtype(tdt):
    torch = sys.modules["torch"]
    table = {torch.int8: INT8, torch.uint8: UINT8, torch.int32: INT32, torch.int64: INT64,
             torch.float16: FLOAT16, torch.bfloat16: BFLOAT16, torch.float32: FLOAT32,
             torch.float64: FLOAT64}
    for name, val in (("uint32", UINT32), ("uint64", UINT64)):  # newer torch only
        if hasattr(torch, name):
            table[getattr(torch, name)] = val
    if tdt not in table:
        raise _bad("torch dtype %s has no cohort equivalent (cohort has %s)"
                   % (tdt, ", ".join(DTYPE_NAMES)))
    return table[tdt]


# struct-module format characters (native, standard sizes checked through itemsize)
_FORMATS = {"b": "s", "B": "u", "c": "u", "h": "s", "H": "u", "i": "s", "I": "u", "l": "s",
            "L": "u", "q": "s", "Q": "u", "n": "s", "N": "u", "e": "f", "f": "f", "d": "f"}
_BY_KIND = {("s", 1): INT8, ("u", 1): UINT8, ("s", 4): INT32, ("u", 4): UINT32,
            ("s", 8): INT64, ("u", 8): UINT64, ("f", 2): FLOAT16, ("f", 4): FLOAT32,
            ("f", 8): FLOAT64}


def _format_dtype(fmt, itemsize):
    f = fmt or "B"
    if f[0] in "@=<":
        f = f[1:]
    elif f[0] in ">!":
        if sys.byteorder == "little":
            raise _bad("big-endian buffer format %r is not supported" % fmt)
        f = f[1:]
    kind = _FORMATS.get(f) if len(f) == 1 else None
    dt = _BY_KIND.get((kind, itemsize)) if kind else None
    if dt is None:
        raise _bad("buffer format %r (item size %d) has no cohort dtype; pass dtype=" %
                   (fmt, itemsize))
    return dt


class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int),
                ("ndim", ctypes.c_int), ("format", ctypes.c_char_p),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


_PyObject_GetBuffer = ctypes.pythonapi.PyObject_GetBuffer
_PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_PyObject_GetBuffer.restype = ctypes.c_int
_PyBuffer_Release = ctypes.pythonapi.PyBuffer_Release
_PyBuffer_Release.argtypes = [ctypes.POINTER(_PyBuffer)]
_PyBuffer_Release.restype = None

_PyBUF_WRITABLE = 0x0001
_PyBUF_FORMAT = 0x0004
_PyBUF_C_CONTIGUOUS = 0x0020 | 0x0008 | 0x0010


class Buf:
    """One buffer argument: .ptr (int address), .count (elements), .dtype (cohort dtype).
    Holds the object (and its buffer export) until release()."""

    __slots__ = ("obj", "ptr", "count", "dtype", "nbytes", "_view")

    def __init__(self, obj, ptr, count, dtype, nbytes, view=None):
        self.obj = obj
        self.ptr = ptr
        self.count = count
        self.dtype = dtype
        self.nbytes = nbytes
        self._view = view

    def release(self):
        if self._view is not None:
            _PyBuffer_Release(ctypes.byref(self._view))
            self._view = None
        self.obj = None

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


def is_tensor(obj):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def get(obj, writable, dtype=None, what="buffer"):
    """A Buf for obj. writable: the call writes into it. dtype overrides the element type (the
    count is then nbytes / size of dtype)."""
    dt = as_dtype(dtype)
    if is_tensor(obj):
        return _tensor(obj, dt, what)
    view = _PyBuffer()
    flags = _PyBUF_C_CONTIGUOUS | _PyBUF_FORMAT | (_PyBUF_WRITABLE if writable else 0)
    try:
        _PyObject_GetBuffer(obj, ctypes.byref(view), flags)
    except (BufferError, TypeError, ValueError) as e:
        if writable and _readonly(obj):
            raise _bad("%s is read-only but this call writes into it" % what) from None
        raise _bad("%s: %s needs a C-contiguous object with the buffer protocol, got %s (%s)"
                   % (what, "receive buffer" if writable else "buffer", type(obj).__name__, e)
                   ) from None
    itemsize = view.itemsize
    nbytes = view.len
    fmt = view.format.decode() if view.format else "B"
    try:
        if dt is None:
            dt = _format_dtype(fmt, itemsize)
            count = nbytes // itemsize if itemsize else 0
        else:
            if nbytes % DTYPE_SIZE[dt]:
                raise _bad("%s: %d bytes is not a whole number of %s elements"
                           % (what, nbytes, DTYPE_NAMES[dt]))
            count = nbytes // DTYPE_SIZE[dt]
    except Exception:
        _PyBuffer_Release(ctypes.byref(view))
        raise
    return Buf(obj, view.buf or 0, count, dt, nbytes, view)


def _readonly(obj):
    try:
        return memoryview(obj).readonly
    except TypeError:
        return False


# Set by the first Context: "" when libcohort sees a CUDA device, else why not.
cuda_probe = None


def _tensor(t, dt, what):
    if t.device.type == "cuda":
        why = cuda_probe() if cuda_probe is not None else "no cohort context"
        if why:
            raise _status.Unsupported(
                _status.ERR_UNSUPPORTED, "%s is a CUDA tensor, but libcohort cannot take it: %s"
                % (what, why))
        # cohort never waits on torch's streams: the data must be ready when the call is made
        # (docs/cuda.md). The result is ready when the call returns or its request completes.
        sys.modules["torch"].cuda.current_stream(t.device).synchronize()
    elif t.device.type != "cpu":
        raise _status.Unsupported(
            _status.ERR_UNSUPPORTED,
            "%s is a %s tensor: cohort takes CPU and CUDA tensors" % (what, t.device.type))
    if not t.is_contiguous():
        raise _bad("%s: tensor is not contiguous (call .contiguous())" % what)
    tdt = _torch_dtype(t.dtype)
    nbytes = t.numel() * t.element_size()
    if dt is None:
        dt, count = tdt, t.numel()
    else:
        if nbytes % DTYPE_SIZE[dt]:
            raise _bad("%s: %d bytes is not a whole number of %s elements"
                       % (what, nbytes, DTYPE_NAMES[dt]))
        count = nbytes // DTYPE_SIZE[dt]
    return Buf(t, t.data_ptr(), count, dt, nbytes)
