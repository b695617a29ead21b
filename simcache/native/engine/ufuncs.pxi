# numpy's own float64 inner loops of the ufuncs the Zipf refill needs (log1p, exp, log, expm1,
# power), called directly on the engine's work arrays: the same function numpy's ufunc call runs
# (the loop it registered for float64, chosen for this CPU when numpy was imported), without the
# call's Python-level cost (argument parsing, the slices' views, type resolution, the iterator).
# That cost was about 6,000 instructions a call, five calls for each round of candidates (a batch
# of up to 2,048 draws, and a short round for its rejected ones, if any): 2 % of the default
# scenario's native loop (docs/research/native-engine.md, Step 20).
#
# The loops are read from numpy's ufunc objects (PyUFuncObject: ``functions``, ``data``,
# ``types``), whose head is declared below so that the build needs no numpy headers, as for
# bitgen_t. The declaration is checked against the object before any loop is taken (the
# argument counts and the loop's type codes, read through it, must be what Python sees), and each
# loop is checked against the ufunc call on values of the operands' range, bit for bit
# (_loops_agree); if anything differs the refill calls the ufuncs as before (``direct_loops``
# False), with the same results. The pointers are read again when an engine sets up its first Zipf VM
# (_loops_still_numpys): a library that patched numpy's loops since (e.g. mkl_umath) turns the
# direct calls off. A VM's ``k ** -theta`` takes the power loop only for a theta that is neither
# an integer nor a half (a safe superset of the exponents numpy's ``**`` may hand to another
# ufunc: numpy 1.x turns -1 into a reciprocal; numpy 2.4 only integer -1 and 2 and a float +0.5,
# none of them a -theta), again checked against ``**`` for the VM's theta (_power_agrees).

cdef extern from *:
    """
    /* numpy's PyUFuncObject up to its type codes (numpy/ufuncobject.h), a layout unchanged from
       numpy 1.x to 2.x; checked at import against the ufuncs (_take_loops). */
    typedef void (*simcache_ufunc_loop)(char **args, const Py_ssize_t *dimensions,
                                        const Py_ssize_t *steps, void *data);
    typedef struct {
        PyObject_HEAD
        int nin, nout, nargs;
        int identity;
        simcache_ufunc_loop *functions;
        void *const *data;
        int ntypes;
        int reserved1;
        const char *name;
        const char *types;
    } simcache_ufunc_head;
    """
    ctypedef void (*simcache_ufunc_loop)(
        char** args, const Py_ssize_t* dimensions, const Py_ssize_t* steps, void* data
    ) noexcept nogil
    ctypedef struct simcache_ufunc_head:
        int nin, nout, nargs
        int ntypes
        simcache_ufunc_loop* functions
        void** data
        const char* types


cdef enum:
    U_LOG1P = 0
    U_EXP = 1
    U_LOG = 2
    U_EXPM1 = 3
    U_POWER = 4
    UFUNCS = 5
    AGREE_SAMPLES = 4096  # values each loop is checked on against its ufunc


cdef struct UfuncLoop:
    simcache_ufunc_loop loop
    void* data


cdef UfuncLoop _LOOPS[UFUNCS]
cdef Py_ssize_t _LOOP_INDEX[UFUNCS]  # each loop's place in its ufunc's table
# whether the loops above were taken and agree with the ufuncs; whether the refill calls them (the
# same unless a test turned them off: direct_ufunc_loops)
cdef bint loops_checked = False
cdef bint direct_loops = False


cdef inline void _apply1(int which, double* source, double* target, int64_t m) noexcept nogil:
    """``ufunc(source[:m], out=target[:m])`` for a one-argument ufunc, through its float64 loop."""
    cdef char* args[2]
    cdef Py_ssize_t dimensions[1]
    cdef Py_ssize_t steps[2]
    args[0] = <char*>source
    args[1] = <char*>target
    dimensions[0] = m
    steps[0] = sizeof(double)
    steps[1] = sizeof(double)
    _LOOPS[which].loop(args, dimensions, steps, _LOOPS[which].data)


cdef inline void _power(double* base, double exponent, double* target, int64_t m) noexcept nogil:
    """``base[:m] ** exponent`` into ``target``, through the float64 power loop (the exponent
    broadcast: a zero step, as numpy passes a scalar)."""
    cdef char* args[3]
    cdef Py_ssize_t dimensions[1]
    cdef Py_ssize_t steps[3]
    args[0] = <char*>base
    args[1] = <char*>&exponent
    args[2] = <char*>target
    dimensions[0] = m
    steps[0] = sizeof(double)
    steps[1] = 0
    steps[2] = sizeof(double)
    _LOOPS[U_POWER].loop(args, dimensions, steps, _LOOPS[U_POWER].data)


cdef bint _take_loops(ufuncs) except -1:
    """Read each ufunc's first float64 loop into _LOOPS (the one numpy's type resolution picks for
    float64 operands: the first in its list); False if a ufunc does not look as declared."""
    cdef simcache_ufunc_head* head
    cdef Py_ssize_t which, index, k
    double_code = np.dtype(np.float64).num
    for which, ufunc in enumerate(ufuncs):
        if type(ufunc) is not np.ufunc:  # (wrapped or replaced: no such struct to read)
            return False
        head = <simcache_ufunc_head*><void*>ufunc
        if (head.nin, head.nout, head.nargs, head.ntypes) != (
            ufunc.nin, ufunc.nout, ufunc.nargs, ufunc.ntypes
        ):
            return False
        signature = "d" * ufunc.nin + "->d"
        if signature not in ufunc.types:
            return False
        index = ufunc.types.index(signature)
        for k in range(head.nargs):
            if head.types[index * head.nargs + k] != double_code:
                return False
        if head.functions == NULL or head.functions[index] == NULL:
            return False
        _LOOPS[which].loop = head.functions[index]
        _LOOPS[which].data = head.data[index] if head.data != NULL else NULL
        _LOOP_INDEX[which] = index
    return True


cdef int _loops_still_numpys() except -1:
    """Turn the direct calls off for good if a ufunc's float64 loop is no longer the one taken at
    import (a library patched numpy's loops since)."""
    global loops_checked, direct_loops
    cdef simcache_ufunc_head* head
    cdef Py_ssize_t which
    if not loops_checked:
        return 0
    for which, ufunc in enumerate(UFUNC_OBJECTS):
        head = <simcache_ufunc_head*><void*>ufunc
        if (
            getattr(np, UFUNC_NAMES[which]) is not ufunc
            or head.functions[_LOOP_INDEX[which]] != _LOOPS[which].loop
        ):
            loops_checked = direct_loops = False
            return 0
    return 0


cdef bint _loops_agree() except -1:
    """Whether each loop gives its ufunc's results, bit for bit, on values of the ranges the refill
    passes it (log1p's and expm1's ``(1 - theta) u``, exp's quotients, log's ``k + 0.5``, powers of
    ranks), drawn from a fixed seed."""
    rng = np.random.default_rng(20261201)
    spans = {
        U_LOG1P: rng.uniform(-0.999, 50.0, AGREE_SAMPLES),
        U_EXP: rng.uniform(-5.0, 40.0, AGREE_SAMPLES),
        U_LOG: rng.uniform(1.5, 1e9, AGREE_SAMPLES),
        U_EXPM1: rng.uniform(-40.0, 40.0, AGREE_SAMPLES),
    }
    for which, ufunc in ((U_LOG1P, np.log1p), (U_EXP, np.exp), (U_LOG, np.log), (U_EXPM1, np.expm1)):
        values = spans[which]
        direct = np.empty(AGREE_SAMPLES)
        _apply1(which, _data(values), _data(direct), AGREE_SAMPLES)
        if not np.array_equal(direct.view(np.uint64), ufunc(values).view(np.uint64)):
            return False
    return _power_agrees(0.9)


# _power_agrees' answers by theta (a millisecond each: asked once per theta and process)
_POWER_AGREES: dict = {}


cdef bint _power_agrees(double theta) except -1:
    """Whether ``k ** -theta`` through the power loop is numpy's ``**`` for ranks from 1 to 2^40,
    bit for bit; never for an exponent numpy's ``**`` may replace by another ufunc (integers and
    halves)."""
    agrees = _POWER_AGREES.get(theta)
    if agrees is not None:
        return agrees
    if 2.0 * theta == floor(2.0 * theta):
        agrees = False
    else:
        ranks = np.floor(np.geomspace(1.0, 2.0**40, AGREE_SAMPLES))
        direct = np.empty(AGREE_SAMPLES)
        _power(_data(ranks), -theta, _data(direct), AGREE_SAMPLES)
        agrees = np.array_equal(direct.view(np.uint64), (ranks ** -theta).view(np.uint64))
    _POWER_AGREES[theta] = agrees
    return agrees


# the ufuncs in the order of U_LOG1P..U_POWER: their names in numpy (the refill without the loops
# calls numpy's by name, as ZipfRanks does) and, as at import, the objects whose loops are taken
UFUNC_NAMES = ("log1p", "exp", "log", "expm1", "power")
UFUNC_OBJECTS = tuple(getattr(np, name) for name in UFUNC_NAMES)


def _set_up_loops():
    """Take numpy's loops at import, if they are what they are declared to be."""
    global loops_checked, direct_loops
    loops_checked = direct_loops = bool(_take_loops(UFUNC_OBJECTS) and _loops_agree())


def direct_ufunc_loops(enabled: bool | None = None) -> bool:
    """Whether the Zipf refill calls numpy's float64 loops directly (else the ufuncs, with the
    same results); ``enabled`` False turns them off, True back on where they were checked at
    import (the tests run both ways)."""
    global direct_loops
    if enabled is not None:
        direct_loops = enabled and loops_checked
    return direct_loops


_set_up_loops()
