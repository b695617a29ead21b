"""vscsiStats importer: histograms written here in the layout `vscsiStats -p all -c` prints,
turned into groups and checks."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.imports import imported_by

from simcache.base.errors import WorkloadFileError
from simcache.base.units import parse_size
from simcache.spec.scenario import MIN_SAMPLE_INTERVAL
from simcache.traces.formats import FORMATS, guess_format
from simcache.traces.formats import vscsistats as vs
from simcache.workloads.ingest.imported import import_workload

# The bucket limits vscsiStats prints; each list ends with the overflow row (the previous limit
# repeated).
LENGTHS = [
    512,
    1024,
    2048,
    4095,
    4096,
    8191,
    8192,
    16383,
    16384,
    32768,
    49152,
    65535,
    65536,
    81920,
    131072,
    262144,
    524288,
    524288,
]
SEEKS = [
    -500000,
    -100000,
    -50000,
    -10000,
    -5000,
    -1000,
    -500,
    -128,
    -64,
    -32,
    -16,
    -8,
    -6,
    -4,
    -2,
    -1,
    0,
]
SEEKS += [1, 2, 4, 6, 8, 16, 32, 64, 128, 500, 1000, 5000, 10000, 50000, 100000, 500000, 500000]
MICROSECONDS = [1, 10, 100, 500, 1000, 5000, 15000, 30000, 50000, 100000, 100000]
OUTSTANDING = [1, 2, 4, 6, 8, 12, 16, 20, 24, 28, 32, 64, 64]
OVER = "over"
"""Key of the overflow bucket in a bucket mapping."""
MEAN_BOUND = 0.5
"""Bytes: a size mix's mean is its mean line's within this (each size rounded to a whole byte)."""
EDGE_BOUND = 1e-5
"""At the very edge of what the buckets allow, the weights' 6 significant digits can also move the
mean, by this share of it."""


def section(
    title: str,
    buckets: Mapping[int | str, int],
    limits: list[int],
    *,
    mean: float,
    vm: str = "2099979",
    disk: str = "8194 (scsi0:0)",
) -> str:
    """One histogram as vscsiStats prints it; ``buckets`` maps a limit (or OVER) to its count."""
    counts = [0] * len(limits)
    for key, count in buckets.items():
        counts[len(limits) - 1 if key == OVER else limits.index(int(key))] += count
    used = [limit for limit, count in zip(limits, counts, strict=True) if count]
    lines = [
        f"Histogram: {title},virtual machine worldGroupID,{vm},virtual disk handleID,{disk}",
        f"min,{min(used) if used else 0}",
        f"max,{max(used) if used else 0}",
        f"mean,{mean}",
        f"count,{sum(counts)}",
        "Frequency,Histogram Bucket Limit",
    ]
    lines += [f"{count},{limit}" for count, limit in zip(counts, limits, strict=True)]
    return "\n".join(lines) + "\n"


def disk_text(
    *,
    reads: Mapping[int | str, int] | None = None,
    writes: Mapping[int | str, int] | None = None,
    seeks: Mapping[int | str, int] | None = None,
    read_latency: Mapping[int | str, int] | None = None,
    write_latency: Mapping[int | str, int] | None = None,
    read_latency_mean: float = 400,
    write_latency_mean: float = 150,
    interarrival_mean: float = 1000,
    outstanding_mean: float = 3,
    vm: str = "2099979",
    disk: str = "8194 (scsi0:0)",
    skip: tuple[str, ...] = (),
) -> str:
    """All 16 histograms of one disk; ``skip`` leaves out titles."""
    reads = {4096: 30} if reads is None else reads
    writes = {4096: 70} if writes is None else writes
    total = sum(reads.values()) + sum(writes.values())
    both = {k: reads.get(k, 0) + writes.get(k, 0) for k in {*reads, *writes}}
    seeks = {500000: total} if seeks is None else seeks
    read_latency = {500: sum(reads.values())} if read_latency is None else read_latency
    write_latency = {100: sum(writes.values())} if write_latency is None else write_latency
    all_latency = {
        k: read_latency.get(k, 0) + write_latency.get(k, 0) for k in {*read_latency, *write_latency}
    }

    def mean_of(buckets: Mapping[int | str, int]) -> float:
        n = sum(buckets.values())
        return round(sum(int(k) * c for k, c in buckets.items() if k != OVER) / n) if n else 0

    parts: dict[str, tuple[Mapping[int | str, int], list[int], float]] = {
        "IO lengths of commands": (both, LENGTHS, mean_of(both)),
        "IO lengths of Read commands": (reads, LENGTHS, mean_of(reads)),
        "IO lengths of Write commands": (writes, LENGTHS, mean_of(writes)),
        "distance (in LBNs) between successive commands": (seeks, SEEKS, 0),
        "distance (in LBNs) between successive Read commands": (
            {500000: sum(reads.values())},
            SEEKS,
            0,
        ),
        "distance (in LBNs) between successive Write commands": (
            {500000: sum(writes.values())},
            SEEKS,
            0,
        ),
        "distance (in LBNs) between each command from the closest of previous 16": (
            seeks,
            SEEKS,
            0,
        ),
        "latency of IOs in Microseconds (us)": (all_latency, MICROSECONDS, 200),
        "latency of Read IOs in Microseconds (us)": (read_latency, MICROSECONDS, read_latency_mean),
        "latency of Write IOs in Microseconds (us)": (
            write_latency,
            MICROSECONDS,
            write_latency_mean,
        ),
        "number of outstanding IOs when a new IO is issued": (
            {4: total},
            OUTSTANDING,
            outstanding_mean,
        ),
        "number of outstanding Read IOs when a new Read IO is issued": (
            {4: sum(reads.values())},
            OUTSTANDING,
            outstanding_mean,
        ),
        "number of outstanding Write IOs when a new Write IO is issued": (
            {4: sum(writes.values())},
            OUTSTANDING,
            outstanding_mean,
        ),
        "latency of IO interarrival time in Microseconds (us)": (
            {1000: total},
            MICROSECONDS,
            interarrival_mean,
        ),
        "latency of IO interarrival time for Reads in Microseconds (us)": (
            {5000: sum(reads.values())},
            MICROSECONDS,
            3000,
        ),
        "latency of IO interarrival time for Writes in Microseconds (us)": (
            {5000: sum(writes.values())},
            MICROSECONDS,
            1500,
        ),
    }
    return "".join(
        section(title, b, limits, mean=m, vm=vm, disk=disk)
        for title, (b, limits, m) in parts.items()
        if title not in skip
    )


def set_stats(text: str, title: str, **values: float) -> str:
    """``text`` with the summary lines (min, max, mean, count) of the first section titled
    ``title`` replaced."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"Histogram: {title},"))
    for offset, name in enumerate(("min", "max", "mean", "count"), start=1):
        if name in values:
            lines[start + offset] = f"{name},{values[name]}"
    return "\n".join(lines) + "\n"


def write(tmp_path: Path, text: str, name: str = "vscsi.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problem(exc: pytest.ExceptionInfo[WorkloadFileError]) -> tuple[str, str]:
    assert len(exc.value.problems) == 1
    return exc.value.problems[0]


def test_size_mix_from_buckets_and_read_fraction(tmp_path: Path) -> None:
    path = write(tmp_path, disk_text(reads={4096: 20, 65536: 10}, writes={4095: 10, 8192: 60}))
    imported = imported_by(vs, path, {})
    assert imported.format == "vscsistats"
    [group] = imported.groups
    assert group["name"] == "vm2099979_scsi0_0"
    workload = group["workload"]
    assert workload["read_fraction"] == 0.3
    # The mean lines here are the limits' means: each size sits at its bucket's limit (t = 1), a
    # 4095 bucket (2049..4095 bytes) at 4095 bytes. The Read and Write histograms differ: each op
    # gets its own mix (weights to 6 significant digits).
    assert workload["read_sizes"] == {"4KiB": 0.666667, "64KiB": 0.333333}
    assert workload["write_sizes"] == {"4095B": 0.142857, "8KiB": 0.857143}
    assert "sizes" not in workload
    assert ("VM 2099979 disk scsi0:0 I/Os", "100 (30 reads, 70 writes)") in imported.facts
    # The write mean line, 7,607, is the limits' 7,606.7 printed whole: the closest the buckets
    # allow, no warning.
    up = "(sizes t = 1 of the way up their buckets; at their tops"
    reads = f"mean read 24,576.0 B, mean line 24,576 B {up} 24,576.0 B)"
    writes = f"mean write 7,606.7 B, mean line 7,607 B {up} 7,606.7 B)"
    how = "read and write mixes of the Read and Write histograms"
    assert dict(imported.facts)["VM 2099979 disk scsi0:0 sizes"] == f"{how}: {reads}; {writes}"
    assert not [w for w in imported.warnings if "the mean line says" in w]
    workload_spec = imported_by(vs, path, {}).scenario().groups[0].workload
    assert workload_spec.op_mean_size(False) == pytest.approx(
        (20 * 4096 + 10 * 65536) / 30, rel=1e-6
    )
    assert workload_spec.op_mean_size(True) == pytest.approx((10 * 4095 + 60 * 8192) / 70, rel=1e-6)


def test_reads_and_writes_with_one_mix_get_the_all_commands_mix(tmp_path: Path) -> None:
    imported = imported_by(
        vs, write(tmp_path, disk_text(reads={4096: 30, 8192: 10}, writes={4096: 45, 8192: 15})), {}
    )
    workload = imported.groups[0]["workload"]
    assert workload["sizes"] == {"4KiB": 0.75, "8KiB": 0.25}
    assert "read_sizes" not in workload and "write_sizes" not in workload
    assert dict(imported.facts)["VM 2099979 disk scsi0:0 sizes"].startswith(
        "one mix for reads and writes, of the all-commands histogram"
    )


def test_overflow_bucket_gets_a_size_above_the_last_limit_and_a_warning(tmp_path: Path) -> None:
    text = disk_text(reads={4096: 10}, writes={4096: 80, OVER: 10})
    # vscsiStats' max line tells the largest I/O; make it 1 MiB, and the mean say the overflow I/Os
    # average 1 MiB, printed as a whole number (120,149.33 cut to 120,149): the overflow size is the
    # one that gives that mean, 2 B under 1 MiB (it was rounded up to 4 KiB before, 0.3 B off).
    mean = (80 * 4096 + 10 * 1048576) // 90
    text = set_stats(text, "IO lengths of Write commands", max=1048576, mean=mean)
    imported = imported_by(vs, write(tmp_path, text), {})
    assert imported.groups[0]["workload"]["write_sizes"] == {"4KiB": 0.888889, "1048574B": 0.111111}
    assert imported.groups[0]["workload"]["read_sizes"] == {"4KiB": 1.0}
    [warning] = [w for w in imported.warnings if "overflow" in w]
    writes = "VM 2099979 disk scsi0:0 writes"
    overflow = "10 I/Os are larger than 512KiB (the overflow bucket); modelled as 1048574B"
    assert f"{writes}: {overflow}" in warning
    spec = imported.scenario().groups[0].workload
    assert spec.op_mean_size(True) == pytest.approx(mean, abs=MEAN_BOUND)


Bounds = Mapping[int, tuple[int, int]]
"""A bucket's limit (-1: the overflow bucket) -> the lowest and highest bytes it holds."""


def sizes_in_buckets(mix: Mapping[str, float], bounds: Bounds) -> dict[int, float]:
    """Each size's weight in ``mix`` by the bucket of ``bounds`` holding it; fails if none does."""
    placed: dict[int, float] = {}
    for key, weight in mix.items():
        size = parse_size(key)
        [limit] = [limit for limit, (low, high) in bounds.items() if low <= size <= high]
        placed[limit] = weight
    return placed


def test_size_mix_has_the_mean_line_where_limits_and_midpoints_miss_it(tmp_path: Path) -> None:
    # Writes of 4 KiB, 12 KiB (in 8193..16383) and 20 KiB (in 16385..32768): mean 10,649.6 B,
    # printed 10,650. The limits give 15,154.9 B (+42%) and the midpoints 11,878.2 B (+11.5%).
    writes = {4096: 50, 16383: 20, 32768: 30}
    text = set_stats(disk_text(reads={}, writes=writes), "IO lengths of commands", mean=10650)
    imported = imported_by(vs, write(tmp_path, text), {})
    workload = imported.groups[0]["workload"]
    mean = imported.scenario().groups[0].workload.op_mean_size(True)
    assert mean == pytest.approx(10650, abs=MEAN_BOUND)
    bounds = {4096: (4096, 4096), 16383: (8193, 16383), 32768: (16385, 32768)}
    assert sizes_in_buckets(workload["sizes"], bounds) == {4096: 0.5, 16383: 0.2, 32768: 0.3}
    # One fraction t of the way up each bucket: the buckets' lowest sizes give 8,602.1 B, their
    # tops 15,154.9 B, so t = (10,650 - 8,602.1) / (15,154.9 - 8,602.1) = 0.3125:
    # 8,193 + 0.3125 x 8,190 and 16,385 + 0.3125 x 16,383.
    assert workload["sizes"] == {"4KiB": 0.5, "10753B": 0.2, "21505B": 0.3}
    fact = dict(imported.facts)["VM 2099979 disk scsi0:0 sizes"]
    how = "one mix for reads and writes, of the all-commands histogram"
    assert fact.startswith(f"{how}: mean 10,650.1 B, mean line 10,650 B")
    assert "(sizes t = 0.313 of the way up their buckets; at their tops 15,155.0 B)" in fact
    note = "size mixes: each I/O length bucket becomes one whole-byte size inside it"
    assert any(w.startswith(note) for w in imported.warnings)
    assert not [w for w in imported.warnings if "the mean line says" in w]


def test_each_op_mix_has_its_own_mean_line(tmp_path: Path) -> None:
    # Reads: 8 KiB and 40 KiB (in 32769..49152), mean 20,889.6 B; writes 4 KiB and 6 KiB (in
    # 4097..8191), 4,505.6 B.
    text = disk_text(reads={8192: 60, 49152: 40}, writes={4096: 80, 8191: 20})
    text = set_stats(text, "IO lengths of Read commands", mean=20890)
    text = set_stats(text, "IO lengths of Write commands", mean=4506)
    imported = imported_by(vs, write(tmp_path, text), {})
    workload = imported.groups[0]["workload"]
    spec = imported.scenario().groups[0].workload
    assert spec.op_mean_size(False) == pytest.approx(20890, abs=MEAN_BOUND)
    assert spec.op_mean_size(True) == pytest.approx(4506, abs=MEAN_BOUND)
    read_bounds = {8192: (8192, 8192), 49152: (32769, 49152)}
    write_bounds = {4096: (4096, 4096), 8191: (4097, 8191)}
    assert sizes_in_buckets(workload["read_sizes"], read_bounds) == {8192: 0.6, 49152: 0.4}
    assert sizes_in_buckets(workload["write_sizes"], write_bounds) == {4096: 0.8, 8191: 0.2}
    assert workload["read_sizes"] == {"8KiB": 0.6, "39937B": 0.4}
    assert workload["write_sizes"] == {"4KiB": 0.8, "6146B": 0.2}
    fact = dict(imported.facts)["VM 2099979 disk scsi0:0 sizes"]
    assert "mean read 20,890.0 B, mean line 20,890 B" in fact
    assert "mean write 4,506.0 B, mean line 4,506 B" in fact


@pytest.mark.parametrize(
    ("mean", "closest", "sizes"),
    [
        # Every size at its limit gives at most 10,239.5 B; every one at the first byte above the
        # previous limit at least 6,144.5 B.
        (20000, "10,239.5", {"4KiB": 0.5, "16383B": 0.5}),
        (3000, "6,144.5", {"4KiB": 0.5, "8193B": 0.5}),
    ],
)
def test_a_mean_line_the_buckets_cannot_reach_gets_the_closest_and_a_warning(
    tmp_path: Path, mean: int, closest: str, sizes: dict[str, float]
) -> None:
    text = disk_text(reads={4096: 10}, writes={4096: 50, 16383: 50})
    text = set_stats(text, "IO lengths of Write commands", mean=mean)
    imported = imported_by(vs, write(tmp_path, text, "inconsistent.csv"), {})
    assert imported.groups[0]["workload"]["write_sizes"] == sizes
    [warning] = [w for w in imported.warnings if "the mean line says" in w]
    where = "inconsistent.csv: 'IO lengths of Write commands' of VM 2099979 disk scsi0:0 writes"
    allowed = "its buckets (with the min and max lines) allow 6,144.5 to 10,239.5 B"
    said = f"the mean line says {mean:,} B"
    takes = f"the size mix takes the closest mean, {closest} B"
    assert warning == f"{where} (line 49): {said}, but {allowed}; {takes}"


def test_inter_arrival_cv_places_its_buckets_at_the_mean_line(tmp_path: Path) -> None:
    # 50 gaps of 100 µs (the min line narrows 10..100 to 100) and 50 in 500..1000 µs, mean 400: the
    # second bucket at 700 µs (t = 0.4), CV 300 / 400. The bucket midpoints (55 and 750 µs) gave a
    # mean of 402.5 µs and a CV of 0.86.
    title = "latency of IO interarrival time in Microseconds (us)"
    text = disk_text(skip=(title,)) + section(title, {100: 50, 1000: 50}, MICROSECONDS, mean=400)
    imported = imported_by(vs, write(tmp_path, text), {})
    fact = dict(imported.facts)["VM 2099979 disk scsi0:0 inter-arrival"]
    cv = "CV ≈ 0.75 (buckets, placed to the mean line; Poisson: 1)"
    assert fact == f"mean 400 µs -> 2,500 IOPS; {cv}"
    assert not [w for w in imported.warnings if "the mean line says" in w]


Drawn = tuple[dict[int | str, int], dict[str, float], Bounds]
"""Bucket counts (by limit, or OVER), the min, max and mean lines, each used bucket's bounds."""


@st.composite
def length_histograms(draw: st.DrawFn) -> Drawn:
    """I/O length bucket counts with consistent min and max lines and a whole-number mean line
    inside what the buckets allow, and each used bucket's lowest and highest bytes."""
    counts = draw(st.lists(st.integers(0, 1000), min_size=len(LENGTHS), max_size=len(LENGTHS)))
    used = [i for i, count in enumerate(counts) if count]
    assume(used)
    overflow = len(LENGTHS) - 1
    # The overflow bucket up to the max line, drawn up to 2 MiB.
    limits = [*LENGTHS[:-1], 4 * LENGTHS[-1]]
    first, last = used[0], used[-1]
    low_of = [1, *(limit + 1 for limit in LENGTHS[:-1])]
    smallest = draw(st.integers(low_of[first], limits[first]))
    largest = draw(st.integers(max(smallest, low_of[last]), limits[last]))
    bounds = {i: (max(low_of[i], smallest), min(limits[i], largest)) for i in used}
    total = sum(counts)
    least = sum(counts[i] * bounds[i][0] for i in used) / total
    most = sum(counts[i] * bounds[i][1] for i in used) / total
    assume(math.ceil(least) <= math.floor(most))
    mean = draw(st.integers(math.ceil(least), math.floor(most)))
    buckets: dict[int | str, int] = {OVER if i == overflow else LENGTHS[i]: counts[i] for i in used}
    keyed = {(-1 if i == overflow else LENGTHS[i]): bound for i, bound in bounds.items()}
    return buckets, {"min": smallest, "max": largest, "mean": mean}, keyed


@settings(max_examples=150, deadline=None)
@given(length_histograms())
def test_property_the_size_mix_has_the_mean_line_and_each_size_is_in_its_bucket(
    histogram: Drawn,
) -> None:
    buckets, stats, bounds = histogram
    text = set_stats(disk_text(reads={}, writes=buckets), "IO lengths of commands", **stats)
    with tempfile.TemporaryDirectory(prefix="simcache-vscsi-") as folder:
        imported = imported_by(vs, write(Path(folder), text), {})
        spec = imported.scenario().groups[0].workload
    mix = imported.groups[0]["workload"]["sizes"]
    total = sum(buckets.values())
    shares = {-1 if k == OVER else int(k): float(f"{c / total:.6g}") for k, c in buckets.items()}
    assert sizes_in_buckets(mix, bounds) == shares
    bound = MEAN_BOUND + EDGE_BOUND * stats["mean"]
    assert abs(spec.op_mean_size(True) - stats["mean"]) <= bound
    assert not [w for w in imported.warnings if "the mean line says" in w]


def test_open_loop_iops_from_the_mean_inter_arrival(tmp_path: Path) -> None:
    imported = imported_by(vs, write(tmp_path, disk_text(interarrival_mean=2500)), {})
    workload = imported.groups[0]["workload"]
    assert (workload["mode"], workload["iops"], workload["arrivals"]) == ("open", 400.0, "poisson")
    # 100 gaps of 2.5 ms: the collection window.
    assert imported.duration == pytest.approx(0.25)
    assert any(
        what.endswith("inter-arrival") and value.startswith("mean 2,500 µs -> 400 IOPS")
        for what, value in imported.facts
    )


def test_a_window_shorter_than_a_sample_still_makes_a_valid_scenario(tmp_path: Path) -> None:
    """A 0.2 ms collection window, under the finest sample a scenario takes (1 ms): the run lasts
    1 ms, sampled every 1 ms, instead of a refused 0.02 ms sample (found by the size-mix property
    test: a file of one 512 KiB command)."""
    imported = imported_by(vs, write(tmp_path, disk_text()), {})
    run = dataclasses.replace(imported, duration=0.0002).scenario().run
    assert (run.duration, run.sample_interval) == (MIN_SAMPLE_INTERVAL, MIN_SAMPLE_INTERVAL)
    assert run.warmup == pytest.approx(MIN_SAMPLE_INTERVAL / 10)


def test_a_leading_gap_from_before_collection_is_left_out_of_the_rate(tmp_path: Path) -> None:
    text = disk_text(interarrival_mean=1000)
    # 99 gaps of 1 ms and one of 900 s: mean line (99 * 1000 + 9e8) / 100.
    text = set_stats(
        text,
        "latency of IO interarrival time in Microseconds (us)",
        max=900_000_000,
        mean=(99 * 1000 + 900_000_000) / 100,
    )
    imported = imported_by(vs, write(tmp_path, text), {})
    assert imported.groups[0]["workload"]["iops"] == 1000.0
    assert imported.duration == pytest.approx(0.099)
    assert any("largest inter-arrival time (900 s)" in w for w in imported.warnings)


def test_closed_mode_uses_the_mean_outstanding_ios(tmp_path: Path) -> None:
    imported = imported_by(vs, write(tmp_path, disk_text(outstanding_mean=5.6)), {"mode": "closed"})
    workload = imported.groups[0]["workload"]
    assert (workload["mode"], workload["workers"], workload["outstanding"]) == ("closed", 1, 6)
    assert "iops" not in workload
    imported.scenario()


def test_two_disks_become_two_groups(tmp_path: Path) -> None:
    text = disk_text() + disk_text(
        vm="2100001", disk="8200 (scsi0:1)", writes={8192: 50}, interarrival_mean=500
    )
    imported = imported_by(vs, write(tmp_path, text), {})
    assert [g["name"] for g in imported.groups] == ["vm2099979_scsi0_0", "vm2100001_scsi0_1"]
    assert [g["workload"]["iops"] for g in imported.groups] == [1000.0, 2000.0]
    assert imported.groups[1]["workload"]["read_fraction"] == 0.375
    assert ("virtual disks", "2 with I/O, of 2 VMs") in imported.facts
    scenario = imported.scenario()
    assert [g.hosts for g in scenario.groups] == [[0], [1]]


def test_layout_vm_keeps_a_vms_disks_on_one_host(tmp_path: Path) -> None:
    text = (
        disk_text() + disk_text(disk="8195 (scsi0:1)") + disk_text(vm="77", disk="9000 (scsi1:0)")
    )
    imported = imported_by(vs, write(tmp_path, text), {"layout": "vm"})
    assert [(g["name"], g["colocate"]) for g in imported.groups] == [
        ("vm2099979_scsi0_0", "vm2099979"),
        ("vm2099979_scsi0_1", "vm2099979"),
        ("vm77_scsi1_0", "vm77"),
    ]
    assert (
        "layout 'vm' puts each VM's disks on one host (2 VMs, round robin over the base "
        "cluster's hosts)" in imported.warnings
    )
    scenario = imported.scenario()
    assert [g.hosts for g in scenario.groups] == [[0], [0], [1]]


def test_latency_expectations_mean_and_percentile_buckets(tmp_path: Path) -> None:
    # 200 reads: 150 in (100, 500] µs, 46 in (500, 1000], 4 in (5000, 15000]: p50 in the first, p95
    # in the second, p99 in the last.
    text = disk_text(
        reads={4096: 200}, read_latency={500: 150, 1000: 46, 15000: 4}, read_latency_mean=412.5
    )
    imported = imported_by(vs, write(tmp_path, text), {"rel": 0.1})
    checks = {e["name"]: e for e in imported.expect if e["op"] == "read"}
    mean = checks["vm2099979_scsi0_0.read.mean_ms"]
    assert (mean["metric"], mean["group"], mean["approx"], mean["rel"]) == (
        "mean_ms",
        "vm2099979_scsi0_0",
        0.4125,
        0.1,
    )
    assert mean["observation"].startswith(
        "vscsiStats measured a mean read latency of 0.4125 ms over 200 reads"
    )
    p50, p95, p99 = (checks[f"vm2099979_scsi0_0.read.{m}"] for m in ("p50_ms", "p95_ms", "p99_ms"))
    # The min line (500) narrows the first bucket's lower edge; the max line (15000) is the last
    # bucket's limit.
    assert (p50.get("at_least"), p50["at_most"]) == (0.5, 0.5)
    assert (p95["at_least"], p95["at_most"]) == (0.5, 1.0)
    assert (p99["at_least"], p99["at_most"]) == (5.0, 15.0)
    # 200 reads cannot resolve the 99.9th percentile.
    assert "vm2099979_scsi0_0.read.p999_ms" not in checks
    writes = [e for e in imported.expect if e["op"] == "write"]
    assert writes[0]["approx"] == 0.15 and writes[0]["rel"] == 0.1
    imported.scenario()


def test_percentile_in_the_overflow_bucket_is_bounded_by_the_max_line(tmp_path: Path) -> None:
    text = disk_text(reads={4096: 100}, read_latency={500: 90, OVER: 10})
    text = set_stats(text, "latency of Read IOs in Microseconds (us)", max=250000)
    checks = {
        e["metric"]: e
        for e in imported_by(vs, write(tmp_path, text), {}).expect
        if e["op"] == "read"
    }
    assert (checks["p95_ms"]["at_least"], checks["p95_ms"]["at_most"]) == (100.0, 250.0)


@pytest.mark.parametrize(
    ("seeks", "access", "run", "share"),
    [
        ({1: 80, OVER: 20}, "uniform", 5.0, "80.0%"),
        ({1: 100}, "sequential", None, "100.0%"),
        ({1: 20, 64: 20, -500000: 30, OVER: 30}, "uniform", 1.667, "40.0%"),
        # +500 is past the default +128: not near-sequential, but 90% of seeks that short make a hot
        # spot of 10 GiB.
        ({500: 90, OVER: 10}, "hotspot", None, "0.0%"),
    ],
)
def test_near_sequential_seeks_set_the_mean_run(
    tmp_path: Path, seeks: dict[int | str, int], access: str, run: float | None, share: str
) -> None:
    imported = imported_by(vs, write(tmp_path, disk_text(seeks=seeks)), {})
    workload = imported.groups[0]["workload"]
    assert workload["access"] == access
    assert workload.get("sequential_run") == run
    fact = dict(imported.facts)["VM 2099979 disk scsi0:0 seeks within +1..+128 LBN"]
    assert (
        fact
        == f"{share} of successive commands, {share} from the closest of the previous 16 -> "
        + (f"sequential_run = {run:g}" if run else f"access = {access!r}")
    )
    assert any(
        "the near-sequential share sets sequential_run (mean run 1 / (1 - share))" in w
        for w in imported.warnings
    )
    imported.scenario()


def test_sequential_within_option_widens_near_sequential(tmp_path: Path) -> None:
    path = write(tmp_path, disk_text(seeks={500: 90, OVER: 10}))
    assert (
        imported_by(vs, path, {"sequential_within": 500}).groups[0]["workload"]["sequential_run"]
        == 10.0
    )


def seek_buckets(distances: np.ndarray) -> dict[int | str, int]:
    """Signed LBN distances counted in vscsiStats' seek buckets: the first limit at or above
    each, else overflow."""
    limits = np.array(SEEKS[:-1])
    index = np.searchsorted(limits, distances, side="left")
    counts = np.bincount(index, minlength=len(SEEKS))
    buckets: dict[int | str, int] = {
        int(limit): int(c) for limit, c in zip(limits, counts[:-1], strict=True) if c
    }
    if counts[-1]:
        buckets[OVER] = int(counts[-1])
    return buckets


def hotspot_distances(
    working_set: int, hot_io: float, hot_span: float, count: int = 20_000
) -> np.ndarray:
    """Distances between successive positions drawn independently from a hot spot over
    ``working_set`` bytes."""
    span = working_set / 512
    u = np.random.default_rng(1).random(count)
    lbn = np.where(
        u < hot_io,
        u / hot_io * hot_span * span,
        hot_span * span + (u - hot_io) / (1 - hot_io) * (1 - hot_span) * span,
    )
    return np.diff(lbn.astype(np.int64))


@pytest.mark.parametrize(
    ("working_set", "hot_io", "hot_span", "expected", "reason"),
    [
        # A hot region of 5% of 1 GiB (105k LBN) is inside the buckets (up to 500k LBN): found.
        (
            "1GiB",
            0.8,
            0.05,
            {"access": "hotspot", "hot_io_fraction": 0.8, "hot_span_fraction": 0.0515},
            "maximum likelihood fit",
        ),
        (
            "100GiB",
            0.95,
            0.001,
            {"access": "hotspot", "hot_io_fraction": 0.95, "hot_span_fraction": 0.00103},
            "maximum likelihood fit",
        ),
        # 20% of 10 GiB (4M LBN) is beyond the last bucket: short seeks are 3x too many, but the
        # size is not resolved.
        (
            "10GiB",
            0.8,
            0.2,
            {"access": "uniform"},
            "its size is not resolved by the buckets (hot span 0.074 to 0.32 ",
        ),
        ("1GiB", 0.5, 0.5, {"access": "uniform"}, "a hot spot fits no better than uniform access"),
    ],
)
def test_other_seeks_are_fitted_with_a_hot_spot(
    tmp_path: Path,
    working_set: str,
    hot_io: float,
    hot_span: float,
    expected: dict[str, Any],
    reason: str,
) -> None:
    distances = hotspot_distances(parse_size(working_set), hot_io, hot_span)
    text = disk_text(reads={4096: 6000}, writes={4096: 13999}, seeks=seek_buckets(distances))
    imported = imported_by(vs, write(tmp_path, text), {"working_set": working_set})
    workload = imported.groups[0]["workload"]
    assert {key: workload[key] for key in expected} == expected
    if expected["access"] == "uniform":
        assert "hot_io_fraction" not in workload
    fact = dict(imported.facts)["VM 2099979 disk scsi0:0 other seeks"]
    assert reason in fact
    imported.scenario()


def test_missing_histogram_is_named_with_how_to_collect(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        disk_text(
            skip=("IO lengths of commands", "latency of IO interarrival time in Microseconds (us)")
        ),
    )
    with pytest.raises(WorkloadFileError) as exc:
        imported_by(vs, path, {})
    where, message = problem(exc)
    assert where == "VM 2099979 disk scsi0:0"
    assert (
        "no 'IO lengths of commands'; 'latency of IO interarrival time in Microseconds (us)' "
        "histograms" in message
    )
    assert "vscsiStats -p all -c" in message
    assert str(path) in str(exc.value)


def test_malformed_frequency_row_names_its_line(tmp_path: Path) -> None:
    lines = disk_text().splitlines()
    lines[8] = "3;4096"
    path = write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(WorkloadFileError) as exc:
        imported_by(vs, path, {})
    assert problem(exc) == ("line 9, Frequency row", "expected '<count>,<limit>', got '3;4096'")


@pytest.mark.parametrize(
    ("line", "text", "where", "fragment"),
    [
        (4, "mean,fast", "line 4, mean", "expected 'mean,<value>' with a number, got 'fast'"),
        (5, "count,-3", "line 5, count", "a whole number of at least 0"),
        (
            8,
            "1,9999999",
            "line 9, Histogram Bucket Limit",
            "limits must not decrease: 2048 after 9999999",
        ),
        (
            1,
            "Histogram: IO lengths of commands,virtual machine worldGroupID",
            "line 1, Histogram title",
            "expected 'Histogram: <title>,",
        ),
        (
            3,
            "min,1",
            "line 3, min",
            "a second min line in the section of line 1; a section gives each once",
        ),
        (6, "max,1", "line 6, max", "a second max line"),
    ],
)
def test_malformed_lines(tmp_path: Path, line: int, text: str, where: str, fragment: str) -> None:
    lines = disk_text().splitlines()
    lines[line - 1] = text
    with pytest.raises(WorkloadFileError) as exc:
        imported_by(vs, write(tmp_path, "\n".join(lines) + "\n"), {})
    got_where, message = problem(exc)
    assert got_where == where
    assert fragment in message


def test_missing_frequency_header_or_stat_lines(tmp_path: Path) -> None:
    lines = disk_text().splitlines()
    del lines[3]  # the first section's mean line
    with pytest.raises(WorkloadFileError) as exc:
        imported_by(vs, write(tmp_path, "\n".join(lines) + "\n"), {})
    assert problem(exc) == (
        "line 5, Frequency header",
        "mean line missing before it (a section gives min, max, mean, count)",
    )
    with pytest.raises(WorkloadFileError) as exc:
        imported_by(
            vs,
            write(
                tmp_path,
                disk_text()
                + (
                    "Histogram: IO lengths of commands,virtual machine worldGroupID,1,virtual "
                    "disk handleID,2\n"
                ),
            ),
            {},
        )
    assert problem(exc)[1] == "ends before any 'Frequency,Histogram Bucket Limit' rows"


def test_bucket_counts_not_matching_the_count_line_warn(tmp_path: Path) -> None:
    text = disk_text().replace("count,100\n", "count,104\n", 1)
    imported = imported_by(vs, write(tmp_path, text), {})
    [warning] = [w for w in imported.warnings if "do not add up" in w]
    assert "line 1 (IO lengths of commands): buckets hold 100, count line 104" in warning


def test_unknown_histograms_are_listed_in_one_warning(tmp_path: Path) -> None:
    text = disk_text() + section("IO lengths of Unmap commands", {512: 3}, LENGTHS, mean=512)
    text += section("queue wait in Microseconds (us)", {10: 3}, MICROSECONDS, mean=10)
    imported = imported_by(vs, write(tmp_path, text), {})
    [warning] = [w for w in imported.warnings if "unknown titles" in w]
    assert f"'IO lengths of Unmap commands' (line {len(disk_text().splitlines()) + 1})" in warning
    assert "'queue wait in Microseconds (us)'" in warning


def test_repeated_prints_reset_between_are_added(tmp_path: Path) -> None:
    text = disk_text(reads={4096: 30}, writes={4096: 70}) + disk_text(
        reads={4096: 50}, writes={8192: 10}
    )
    imported = imported_by(vs, write(tmp_path, text), {})
    workload = imported.groups[0]["workload"]
    assert workload["read_fraction"] == 0.5
    assert (workload["read_sizes"], workload["write_sizes"]) == (
        {"4KiB": 1.0},
        {"4KiB": 0.875, "8KiB": 0.125},
    )
    assert any(
        "taken as prints reset with -r between them: added up" in w for w in imported.warnings
    )
    # Told they are cumulative prints, only the last one counts.
    last = imported_by(vs, write(tmp_path, text), {"snapshots": "last"}).groups[0]["workload"]
    assert last["read_fraction"] == pytest.approx(50 / 60)


def test_cumulative_prints_are_detected(tmp_path: Path) -> None:
    text = disk_text(reads={4096: 30}, writes={4096: 70}) + disk_text(
        reads={4096: 40}, writes={4096: 80}
    )
    imported = imported_by(vs, write(tmp_path, text), {})
    assert imported.groups[0]["workload"]["read_fraction"] == pytest.approx(1 / 3, abs=1e-6)
    assert any("cumulative prints: the last one used" in w for w in imported.warnings)


def test_working_set_default_is_said_and_option_used(tmp_path: Path) -> None:
    path = write(tmp_path, disk_text())
    imported = imported_by(vs, path, {})
    assert imported.groups[0]["workload"]["working_set"] == "10GiB"
    assert (
        "working_set is not in vscsiStats' histograms: each VM touches 10GiB (the default; give "
        "option working_set)" in imported.warnings
    )
    given = imported_by(vs, path, {"working_set": "2GiB"})
    assert given.groups[0]["workload"]["working_set"] == "2GiB"


@pytest.mark.parametrize(
    ("options", "field", "fragment"),
    [
        ({"depth": 4}, "options.depth", "unknown option for the vscsistats format; use layout:"),
        ({"layout": "host"}, "options.layout", "'host' is not one of disk, vm"),
        ({"mode": "trace"}, "options.mode", "not one of open, closed"),
        ({"working_set": "lots"}, "options.working_set", "cannot read 'lots' as a size"),
        ({"rel": 0}, "options.rel", "a relative tolerance above 0"),
        ({"sequential_within": 0}, "options.sequential_within", "at least 1"),
        ({"snapshots": "first"}, "options.snapshots", "not one of auto, sum, last"),
    ],
)
def test_bad_options(tmp_path: Path, options: dict[str, object], field: str, fragment: str) -> None:
    with pytest.raises(WorkloadFileError) as exc:
        imported_by(vs, write(tmp_path, disk_text()), options)
    where, message = problem(exc)
    assert where == field
    assert fragment in message


def test_idle_disks_are_left_out_and_all_idle_is_an_error(tmp_path: Path) -> None:
    idle = disk_text(
        vm="5", disk="1 (scsi0:0)", reads={}, writes={}, seeks={}, read_latency={}, write_latency={}
    )
    imported = imported_by(vs, write(tmp_path, disk_text() + idle), {})
    assert [g["name"] for g in imported.groups] == ["vm2099979_scsi0_0"]
    assert "disks with no I/Os are left out: VM 5 disk scsi0:0" in imported.warnings
    with pytest.raises(WorkloadFileError) as exc:
        imported_by(vs, write(tmp_path, idle), {})
    assert "nothing to model" in problem(exc)[1]


SNIFF_OTHERS = {
    "fio job": "[global]\nioengine=libaio\nbs=4k\n\n[randwrite]\nrw=randwrite\nsize=1g\n",
    "blkparse": "  8,0    3        1     0.000000000  4162  Q   W 1234567 + 8 [fio]\n"
    "  8,0    3        2     0.000001000  4162  D   W 1234567 + 8 [fio]\n",
    "msr": (
        "128166372003061629,wdev,0,Write,3154152960,4096,1344\n"
        "128166372016382155,wdev,0,Read,3154152960,4096,1213\n"
    ),
    "plain csv": "time,op,offset,size\n0.1,R,4096,4096\n0.2,W,8192,4096\n",
    "histogram-like csv": "Histogram: response times\nFrequency,Histogram Bucket Limit\n3,10\n",
}


@pytest.mark.parametrize("name", SNIFF_OTHERS)
def test_sniff_claims_no_other_format(name: str) -> None:
    assert not vs.sniff(SNIFF_OTHERS[name])


def test_sniff_takes_a_vscsistats_print(tmp_path: Path) -> None:
    text = disk_text()
    assert vs.sniff(text[:8192])
    assert vs.sniff(text.replace("\n", "\r\n")[:8192])
    crlf = import_workload(write(tmp_path, text.replace("\n", "\r\n")), format="vscsistats")
    assert crlf.groups == imported_by(vs, write(tmp_path, text, "lf.csv"), {}).groups


def test_guess_format_finds_vscsistats(tmp_path: Path) -> None:
    for module in FORMATS.values():
        if importlib.util.find_spec(f"simcache.traces.formats.{module}") is None:
            pytest.skip(
                f"simcache.traces.formats.{module} is not there yet: guessing tries every format"
            )
    assert guess_format(write(tmp_path, disk_text())) == "vscsistats"


def test_imported_scenario_validates_on_the_default_cluster(tmp_path: Path) -> None:
    text = disk_text(reads={4096: 30, OVER: 2}, writes={4095: 60}) + disk_text(
        vm="9", disk="3 (scsi0:0)", seeks={1: 100}
    )
    imported = imported_by(vs, write(tmp_path, text), {})
    scenario = imported.scenario()
    assert [g.name for g in scenario.groups] == ["vm2099979_scsi0_0", "vm9_scsi0_0"]
    assert scenario.groups[1].workload.access == "sequential"
    assert scenario.groups[0].workload.iops == 1000.0
    assert {e.name for e in scenario.expect} >= {
        "vm2099979_scsi0_0.read.mean_ms",
        "vm9_scsi0_0.write.p95_ms",
    }
    assert scenario.run.duration == pytest.approx(imported.duration)
    assert "warning: working_set is not in vscsiStats' histograms" in imported.toml()


def test_lines_before_the_first_histogram_are_listed(tmp_path: Path) -> None:
    text = "Printed by vscsiStats\nsecond note\n\n" + disk_text()
    imported = imported_by(vs, write(tmp_path, text), {})
    assert "2 lines before the first histogram are not used (lines 1, 2)" in imported.warnings
    assert imported.groups[0]["workload"]["read_fraction"] == 0.3


def test_a_stray_line_inside_the_stats_is_an_error(tmp_path: Path) -> None:
    lines = disk_text().splitlines()
    lines.insert(2, "average,7")
    with pytest.raises(WorkloadFileError) as exc:
        imported_by(vs, write(tmp_path, "\n".join(lines)), {})
    assert problem(exc) == (
        "line 3, section",
        "expected min, max, mean, count or 'Frequency,Histogram Bucket Limit' after a title, got "
        "'average,7'",
    )


def test_other_commands_are_counted_in_the_facts(tmp_path: Path) -> None:
    text = set_stats(disk_text(), "IO lengths of commands", count=103)
    text = text.replace("100,4096\n", "103,4096\n", 1)
    imported = imported_by(vs, write(tmp_path, text), {})
    assert (
        dict(imported.facts)["VM 2099979 disk scsi0:0 I/Os"]
        == "103 (30 reads, 70 writes, 3 other commands, not modelled)"
    )


def test_lengths_without_any_bucket_count_are_an_error(tmp_path: Path) -> None:
    # The count line says 100 I/Os but every bucket is empty.
    text = disk_text().replace("100,4096\n", "0,4096\n", 1)
    with pytest.raises(WorkloadFileError) as exc:
        imported_by(vs, write(tmp_path, text), {})
    assert problem(exc) == (
        "line 1, IO lengths of commands",
        "no bucket counts an I/O with data: no size mix to model",
    )
