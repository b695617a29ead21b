"""A finished run leaves nothing of its model in memory: the app, a sweep's workers and a notebook
run many scenarios in one process, which would otherwise grow with every run (each run's hosts,
caches and buffers kept until the process ends)."""

from __future__ import annotations

import pytest
from support.memory import hosts_alive
from support.paths import ROOT

import simcache


@pytest.mark.parametrize(
    ("scenario", "native"),
    [
        ("vmotion.toml", "1"),  # the native engine, with a Python process (the vMotion) queued
        ("default.toml", "0"),  # the Python engine
    ],
)
def test_a_finished_run_frees_its_model(
    scenario: str, native: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three runs of half a second each (the runs end with events still queued, as every run
    does): afterwards as many hosts are alive as before them."""
    monkeypatch.setenv("SIMCACHE_NATIVE_ENGINE", native)
    loaded = simcache.load_scenario(ROOT / "scenarios" / scenario).with_duration(0.5)
    before = hosts_alive()
    for seed in (1, 2, 3):
        result = simcache.simulate(loaded, seed=seed)
        assert result.meta["ios"] > 0
        del result
    assert hosts_alive() == before
