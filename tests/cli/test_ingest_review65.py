"""import, fit, calibrate and compare-trace on the honest mistakes of review 65: an output path
that cannot be written (refused before any work), a seed that is not one, a fit interval longer
than the trace, and a trace without time extent."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from support.cli import call
from support.paths import ROOT

EXAMPLE_TRACE = ROOT / "examples" / "vm-burst.csv"


@pytest.fixture(autouse=True)
def _trace_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Traces parsed by these tests go to a cache of their own."""
    monkeypatch.setenv("SIMCACHE_CACHE", str(tmp_path / "cache"))


def msr_trace(path: Path, times_s: list[float]) -> Path:
    """An MSR trace of one disk with an I/O at each of ``times_s`` (seconds from 2007-02-22)."""
    start = 128_166_372_000_000_000
    lines = [
        f"{start + round(t * 10_000_000)},usr,0,{'Read' if i % 3 else 'Write'},{(i % 500) * 4096},"
        "4096,1000"
        for i, t in enumerate(times_s)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["import"],
        ["fit"],
        ["calibrate"],
    ],
)
def test_an_output_path_in_a_missing_folder_is_refused_before_reading(
    tmp_path: Path, command: list[str]
) -> None:
    """The input cannot be read either: the -o error coming first shows -o is checked before any
    work (review 65, 2: 26 s of fitting, then a FileNotFoundError)."""
    unreadable = tmp_path / "not-a-trace.txt"
    unreadable.write_text("nothing here is a trace or a result\n")
    out = tmp_path / "missing" / "x.toml"
    code, _, stderr = call([*command, str(unreadable), "-o", str(out)])
    assert code == 2, stderr
    assert stderr.startswith(f"error: {out}: cannot write there")
    assert "-o: its folder" in stderr and "does not exist" in stderr
    assert "Traceback" not in stderr and not out.parent.exists()


def test_an_output_path_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    code, _, stderr = call(["import", str(EXAMPLE_TRACE), "-o", str(tmp_path)])
    assert code == 2
    assert "-o: is a folder, not a file" in stderr


def test_compare_trace_refuses_a_negative_seed_naming_it(tmp_path: Path) -> None:
    scenario = tmp_path / "fit.toml"
    assert call(["fit", str(EXAMPLE_TRACE), "--interval", "1s", "-o", str(scenario)])[0] == 0
    code, _, stderr = call(["compare-trace", str(EXAMPLE_TRACE), str(scenario), "--seed", "-1"])
    assert code == 2
    assert "--seed: invalid option" in stderr and "-1 is not a seed" in stderr
    assert "Traceback" not in stderr


def test_fit_with_an_interval_longer_than_the_trace_keeps_its_rate(tmp_path: Path) -> None:
    """600 I/Os evenly over 60 s (10 I/O/s) fitted with 1000 s steps: one step, covered 6%, at
    the trace's rate, not 600 / 1000 s (review 65, 3)."""
    trace = msr_trace(tmp_path / "t.csv", [i * 0.1 for i in range(600)])
    out = tmp_path / "fit.toml"
    code, stdout, stderr = call(["fit", str(trace), "--interval", "1000s", "-o", str(out)])
    assert code == 0, stderr
    workload = tomllib.loads(out.read_text())["groups"][0]["workload"]
    assert workload["iops"] == pytest.approx(10.0, rel=1e-3)
    assert "last profile step: the trace covers 0.06 of its 1,000 s" in stdout


def test_fit_with_an_interval_not_dividing_the_trace_keeps_its_rate(tmp_path: Path) -> None:
    """65 s of 10 I/O/s in 30 s steps: two whole steps and a 5 s one weighted by 30 / 5; the
    profile's rate in each step and its mean are the trace's."""
    trace = msr_trace(tmp_path / "t.csv", [i * 0.1 for i in range(650)])
    out = tmp_path / "fit.toml"
    assert call(["fit", str(trace), "--interval", "30s", "-o", str(out)])[0] == 0
    workload = tomllib.loads(out.read_text())["groups"][0]["workload"]
    assert workload["iops"] == pytest.approx(10.0, rel=1e-3)
    assert workload["duty_cycle"]["levels"] == pytest.approx([300.0] * 3)


def test_fit_warns_when_its_rate_is_not_the_traces(tmp_path: Path) -> None:
    """A burst in the last moment of a trace: the last 1 s step's rate, weighted up, is far from
    the trace's mean, and the fit says so."""
    times = [float(i) for i in range(10)] + [10.0 + i * 1e-4 for i in range(50)]
    trace = msr_trace(tmp_path / "t.csv", times)
    code, stdout, stderr = call(["fit", str(trace), "--interval", "1s", "-o", str(tmp_path / "f")])
    assert code == 0, stderr
    assert "warning: usr_0: the fitted mean rate" in stdout
    assert "differs from the trace's" in stdout and "compare-trace" in stdout


def test_fit_refuses_a_trace_without_time_extent(tmp_path: Path) -> None:
    trace = msr_trace(tmp_path / "same.csv", [5.0] * 100)
    code, _, stderr = call(["fit", str(trace)])
    assert code == 2
    assert "has no time extent: its 100 reads and writes all have one timestamp" in stderr


def test_import_warns_of_a_trace_without_time_extent(tmp_path: Path) -> None:
    trace = msr_trace(tmp_path / "same.csv", [5.0] * 100)
    code, _, stderr = call(["import", str(trace)])
    assert code == 0
    assert "warning: the trace has no time extent: its 100 I/Os all have one timestamp" in stderr
    assert "set run.warmup = 0" in stderr


def test_import_warns_of_a_trace_inside_the_warmup(tmp_path: Path) -> None:
    trace = msr_trace(tmp_path / "short.csv", [i * 1e-4 for i in range(100)])
    code, _, stderr = call(["import", str(trace)])
    assert code == 0
    assert "warning: the trace spans only 0.0099 s" in stderr
    assert "inside the run's 0.101 s warm-up" in stderr
