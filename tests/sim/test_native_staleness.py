"""A native extension built before its sources last changed is not used
(``simcache.native.choice.native_extension``): after an edit, a ``git pull`` or a branch switch
without a reinstall, the old build would otherwise run code its sources no longer say, silently.
The Python engine (or the kernel's own heap) runs instead, with a warning naming the source and
the fix: the same results, slower, as for a mypyc group whose sources changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import simcache
from simcache.native import choice
from simcache.sim import native_run


def _files(tmp_path: Path, ages: dict[str, float]) -> Path:
    """Files in ``tmp_path`` with the given ages (seconds before now); returns the folder."""
    for name, age in ages.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)
        stamp = path.stat().st_mtime - age
        os.utime(path, (stamp, stamp))
    return tmp_path


def test_a_source_changed_after_the_build_is_named(tmp_path):
    folder = _files(
        tmp_path,
        {"_engine.so": 100.0, "_engine.pyx": 200.0, "engine/a.pxi": 150.0, "engine/b.pxi": 10.0},
    )
    stale = choice.stale_native(folder / "_engine.so", choice.NATIVE_SOURCES["_engine"])
    assert stale == folder / "engine" / "b.pxi"


def test_sources_older_than_the_build_or_absent_leave_it_in_use(tmp_path):
    folder = _files(tmp_path, {"_engine.so": 10.0, "_engine.pyx": 200.0, "engine/a.pxi": 150.0})
    assert choice.stale_native(folder / "_engine.so", choice.NATIVE_SOURCES["_engine"]) is None
    wheel = _files(tmp_path / "wheel", {"_engine.so": 10.0})  # a wheel ships the build only
    assert choice.stale_native(wheel / "_engine.so", choice.NATIVE_SOURCES["_engine"]) is None


def test_a_stale_engine_is_not_used_and_the_warning_says_how_to_rebuild(monkeypatch):
    """Said once; every scenario then runs in the Python engine, its record saying why."""
    monkeypatch.setattr(choice, "_NATIVE_CHECKED", {})
    monkeypatch.setattr(choice, "stale_native", lambda built, sources: Path("engine/cache.pxi"))
    with pytest.warns(RuntimeWarning, match=r"built before engine/cache.pxi last changed") as said:
        assert choice.native_extension("_engine") is None
    assert "reinstall (pip install -e . with the same SIMCACHE_ settings)" in str(said[0].message)
    assert not native_run.available()
    native, run_by = native_run.choose(simcache.load_scenario("default"), None)
    assert not native
    assert "built before its sources last changed (reinstall)" in run_by


@pytest.mark.skipif(not native_run.available(), reason="the native engine is not built")
def test_this_install_built_its_native_extensions_after_their_sources():
    """What a fresh install gives (``.ci/run``): neither extension older than its sources."""
    from simcache.native import _engine, _queue

    for name, module in (("_engine", _engine), ("_queue", _queue)):
        assert choice.stale_native(module.__file__, choice.NATIVE_SOURCES[name]) is None
