"""bench_engine.py's profile split: how it sorts perf samples into event machinery, model code
and runtime (issue 35)."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest
from support.paths import ROOT

BENCH = ROOT / "bench"


@pytest.fixture(scope="module")
def bench_engine() -> Any:
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("bench_engine")
    finally:
        sys.path.remove(str(BENCH))


def _sample(*frames: str) -> str:
    return (
        "python 1 0.1: 1 cpu-clock:\n" + "\n".join(f"\t     abc {frame}" for frame in frames) + "\n"
    )


SCRIPT = "\n".join(
    [
        # the kernel's own code, under the run loop
        _sample(
            "CPyDef_heap____sift_down+0x10 (/x/simcache.so)",
            "CPyDef_clock___run_until+0x5 (/x/simcache.so)",
        ),
        # a model function's own code
        _sample(
            "CPyDef_vm___VM___write.localalias+0x1 (/x/simcache.so)",
            "CPyDef_clock___run_until+0x5 (/x/simcache.so)",
        ),
        # the runtime, inlined into a model function: charged to the model
        _sample(
            "Py_DECREF+0x0 (inlined)",
            "CPyDef_tier___Tier___submit+0x9 (/x/simcache.so)",
            "CPyDef_clock___run_until+0x5 (/x/simcache.so)",
        ),
        # the runtime called by the kernel: charged to the event machinery
        _sample(
            "dictkeys_generic_lookup+0x3 (/usr/lib/libpython3.11.so.1.0)",
            "CPyDef_clock___Clock___push+0x2 (/x/simcache.so)",
            "CPyDef_clock___run_until+0x5 (/x/simcache.so)",
        ),
        # outside the run loop (build, result tables): not counted
        _sample("CPyDef_engine___build+0x1 (/x/simcache.so)", "main+0x1 (/usr/bin/python3.11)"),
    ]
)


def test_samples_are_sorted_by_their_innermost_function_and_its_nearest_compiled_caller(
    bench_engine: Any,
) -> None:
    split = bench_engine.classify_stacks(SCRIPT)
    assert (split["samples"], split["samples_in_run_loop"]) == (5, 4)
    assert split["share"] == {
        "event machinery": 0.25,
        "model code": 0.25,
        "runtime called by event machinery": 0.25,
        "runtime called by model code": 0.25,
    }
    assert split["top_model"] == {"vm___VM___write": 0.25}
    assert set(split["top_runtime"]) == {"Py_DECREF", "dictkeys_generic_lookup"}
    assert sum(split["runtime_by_kind"].values()) == 0.5


NATIVE = "__pyx_f_8simcache_6native_7_engine_"
NATIVE_SCRIPT = "\n".join(
    [
        # the native loop's own code and its radix queue: the event machinery
        _sample(f"{NATIVE}6Engine__loop+0x2ff (/x/_engine.so)", "CPyDef_native_run___run+0x1"),
        _sample(
            f"{NATIVE}_rq_refill+0x9e (/x/_engine.so)",
            f"{NATIVE}6Engine__loop+0x86d (/x/_engine.so)",
        ),
        # the read cache's lookup, reached from a VM's start: model code
        _sample(
            f"{NATIVE}_lookup+0xa7 (/x/_engine.so)",
            f"{NATIVE}_start+0x339 (/x/_engine.so)",
            f"{NATIVE}6Engine__loop+0x68d (/x/_engine.so)",
        ),
        # numpy's bit generator, drawn by the model's refill: runtime called by model code
        _sample(
            "__pyx_f_5numpy_6random_6_pcg64_pcg64_double+0x61 (/x/_pcg64.so)",
            f"{NATIVE}_draw_ops+0x10 (/x/_engine.so)",
            f"{NATIVE}6Engine__loop+0x68d (/x/_engine.so)",
        ),
        # the native engine's records read into Python after the run: not counted
        _sample(f"{NATIVE}_records_out+0x22a (/x/_engine.so)", "main+0x1 (/usr/bin/python3.11)"),
    ]
)


def test_the_native_engines_loop_is_split_as_the_compiled_kernels(bench_engine: Any) -> None:
    split = bench_engine.classify_stacks(NATIVE_SCRIPT)
    assert (split["samples"], split["samples_in_run_loop"]) == (5, 4)
    assert split["share"] == {
        "event machinery": 0.5,
        "model code": 0.25,
        "runtime called by event machinery": 0.0,
        "runtime called by model code": 0.25,
    }
    assert split["top_model"] == {"_lookup": 0.25}
    assert split["top_runtime"] == {"__pyx_f_5numpy_6random_6_pcg64_pcg64_double": 0.25}
