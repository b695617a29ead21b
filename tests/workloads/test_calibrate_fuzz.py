"""Fuzzing ``simcache calibrate``: mutated fio JSON results end in a fitted device or in the
project's own error (:class:`~simcache.base.errors.ScenarioError`, of which ``CalibrationError`` and
``WorkloadFileError`` are kinds), never a traceback, and a fitted device is a tier (or drive) a
scenario takes.

Each case starts from real results (tests/data/calibrate: an Intel D3-S4610 at two queue depths,
reads and writes; a Samsung F1 drive at QD1 and QD4) and mutates one file: a value of the JSON tree
replaced with one that does not belong (negative, zero, NaN, infinity, huge, tiny, the wrong type),
a key deleted, a job repeated, or the file's lines and bytes changed as the importers' fuzzer does
(``tests/traces/test_import_fuzz.py``). Reading the points is fast, so it gets many cases; a fit
takes about a second, so the fits get a few (``bench/fuzz_inputs.py`` runs both for longer).
"""

from __future__ import annotations

import copy
import json
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.mutations import mutated
from support.paths import DATA

from simcache.base.errors import ScenarioError
from simcache.spec.array import DriveSpec
from simcache.spec.components import TierSpec
from simcache.workloads.calibrate.device import calibrate
from simcache.workloads.calibrate.points import read_points

CALIBRATE = DATA / "calibrate"
TIER_FILES = [
    CALIBRATE / "intel-d3-s4610" / name
    for name in ("randread-1-1.json", "randread-1-8.json", "randwrite-1-4.json")
]
DRIVE_FILES = [
    CALIBRATE / "samsung-f1" / name for name in ("randread-1-1.json", "randread-4-1.json")
]

JUNK_VALUES: list[Any] = [
    -1,
    0,
    -0.0,
    1e-300,
    1e300,
    10**30,
    math.nan,
    math.inf,
    -math.inf,
    "",
    "x",
    "-4k",
    "1e309",
    "nan",
    None,
    True,
    [],
    {},
    [1, 2],
    {"a": 1},
]


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position in a JSON tree (dict keys and list indexes from the root)."""
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _leaves(value, (*path, index))
    return found


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        node = node[step]
    return node


@st.composite
def mutated_tree(draw: st.DrawFn, text: str) -> bytes:
    """``text`` (a fio JSON document) with one to four values replaced, keys deleted or jobs
    repeated; written with NaN and infinity as fio never writes them (JSON's extension)."""
    document = json.loads(text)
    for _ in range(draw(st.integers(1, 4))):
        positions = [p for p in _leaves(document) if p]
        # the keys that decide a point, more often than the rest of the document
        decisive = [
            p
            for p in positions
            if {"jobs", "job options", "read", "write", "fio version", "clat_ns", "lat_ns"}
            & {step for step in p if isinstance(step, str)}
        ]
        path = draw(st.sampled_from(decisive or positions))
        parent, last = _at(document, path[:-1]), path[-1]
        kind = draw(st.sampled_from(["value", "value", "value", "delete", "repeat"]))
        if kind == "delete" and isinstance(parent, dict):
            del parent[last]
        elif kind == "repeat" and isinstance(parent, list):
            parent.insert(last, json.loads(json.dumps(parent[last])))
        else:
            # a copy: the junk lists and objects are shared between cases (and a later
            # mutation inside one must not change, or nest, the others)
            parent[last] = copy.deepcopy(draw(st.sampled_from(JUNK_VALUES)))
    return json.dumps(document).encode()


def _mutant(draw: st.DrawFn, files: list[Path]) -> tuple[int, bytes]:
    """One of ``files`` mutated (its index and its new bytes)."""
    index = draw(st.integers(0, len(files) - 1))
    text = files[index].read_text()
    tree = st.just(text).flatmap(mutated_tree)
    lines = st.just(text).flatmap(mutated)
    return index, draw(st.one_of(tree, tree, lines))


def _written(folder: Path, files: list[Path], index: int, data: bytes) -> list[Path]:
    """The files, ``files[index]`` replaced by ``data``, in ``folder``."""
    paths = []
    for position, source in enumerate(files):
        path = folder / source.name
        path.write_bytes(data if position == index else source.read_bytes())
        paths.append(path)
    return paths


def _points_or_error(paths: list[Path]) -> None:
    """Read the points; every one a pattern a device ran (finite, positive figures)."""
    try:
        points = read_points(paths)
    except ScenarioError:
        return
    assert len({p.outstanding for p in points.points}) >= 2
    for point in points.points:
        assert point.op in ("read", "write")
        assert point.size > 0 and point.outstanding >= 1
        assert math.isfinite(point.iops) and point.iops > 0
        assert math.isfinite(point.mean) and point.mean > 0


def _device_or_error(paths: list[Path], kind: str) -> None:
    """Calibrate; a fitted device's table is a complete spec of its kind."""
    try:
        result = calibrate(paths, kind)
    except ScenarioError:
        return
    spec = TierSpec if kind == "tier" else DriveSpec
    spec.model_validate(result.table())


_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)


@settings(_SETTINGS, max_examples=300)
@given(data=st.data())
def test_mutated_fio_results_end_in_points_or_the_projects_error(data: st.DataObject) -> None:
    files = data.draw(st.sampled_from([TIER_FILES, DRIVE_FILES]))
    index, mutant = _mutant(data.draw, files)
    with tempfile.TemporaryDirectory(prefix="simcache-fuzz-") as folder:
        _points_or_error(_written(Path(folder), files, index, mutant))


def _fit_case(data: st.DataObject, files: list[Path], kind: str) -> None:
    """One of ``files`` mutated, then calibrated as ``kind``."""
    index, mutant = _mutant(data.draw, files)
    with tempfile.TemporaryDirectory(prefix="simcache-fuzz-") as folder:
        _device_or_error(_written(Path(folder), files, index, mutant), kind)


# A tier's fit of a mutant takes about 3 s (the suite's slowest test at 12 cases, 35 s): 6 a run,
# as the drive's; bench/fuzz_inputs.py runs many more.
@settings(_SETTINGS, max_examples=6)
@given(data=st.data())
def test_mutated_fio_results_end_in_a_tier_or_the_projects_error(data: st.DataObject) -> None:
    _fit_case(data, TIER_FILES, "tier")


@settings(_SETTINGS, max_examples=6)
@given(data=st.data())
def test_mutated_fio_results_end_in_a_drive_or_the_projects_error(data: st.DataObject) -> None:
    _fit_case(data, DRIVE_FILES, "drive")
