"""The catalogue of current hardware (issue 34): the profiles exist, load, show every number with
its source in `simcache profiles`, and their derived figures follow from the sources their
comments name."""

from __future__ import annotations

import re

import pytest

from simcache.cli.main import main
from simcache.physics.cluster import (
    INTERFACE_RATES,
    framed_bytes,
    gc_refill_rate,
    pipe_rate,
    tier_units,
)
from simcache.spec import LinkSpec, TierSpec
from simcache.spec.profiles import KINDS, field_notes, get_profile, list_profiles

WORDS = (
    "description",
    "source",
    "kind",
    "volatile",
    "raid",
    "drive",
    "profile",
    "interface",
    "service",
    "condition",
)
"""Fields that are names or flags, not figures needing a source."""

CATALOGUE: dict[str, tuple[str, ...]] = {
    "tier": (
        "nvme-pm9a3",
        "nvme-micron-9550",
        "nvme-qlc-p5336",
        "sata-ssd-d3-s4610",
        "scm-optane-p4800x",
        "ram-ddr5",
    ),
    "link": ("25GbE", "100GbE", "200GbE", "roce-100GbE"),
}
"""The profiles issue 34 asks for, by kind."""

SOURCES = (
    # standards
    "IEEE 802.3",
    "RFC ",
    "InfiniBand",
    "PCIe",
    "SATA",
    "JEDEC",
    "NVMe",
    # vendors' datasheets, product briefs and manuals
    "Intel",
    "Samsung",
    "Micron",
    "Kioxia",
    "Solidigm",
    "Seagate",
    "Savvio",
    "HGST",
    "Hitachi",
    "WD Ultrastar",
    "NVIDIA",
    # reviews, press, papers, measurements
    "AnandTech",
    "Tom's Hardware",
    "StorageReview",
    "TweakTown",
    "KitGuru",
    "ServeTheHome",
    "ComputerBase",
    "heise",
    "Architecting IT",
    "Blocks & Files",
    "cpunews",
    "ISSCC",
    "FAST 20",
    "McCalpin",
    "Larsen",
    "Hurwitz",
    "Cohen",
    "IBM",
    "WWT",
    "Potter",
    "louwrentius",
    "oberstet",
    "Ignalina",
    "ceph-tools",
    # the project's own briefs and field observations
    "REFERENCE",
    "DOMAIN",
    "field observation",
    "field report",
)
"""Names a source comment may cite. A number's comment must name one of these, say "assumption"
(or "unverified"), or name another profile of its kind (``as 1GbE``) or another field of its own
profile (``as read_bandwidth``) whose comment does. A new source: add its name here."""

LABELS = ("assumption", "unverified")


def _cites(
    kind: str, name: str, field: str, seen: frozenset[tuple[str, str]] = frozenset()
) -> bool:
    """Whether the comment beside ``field`` of profile ``name`` names a source, says it is an
    assumption, or defers to a profile or sibling field whose comment does (followed once each,
    so a loop of references fails)."""
    note = field_notes(kind).get(name, {}).get(field, "")
    if not note:
        return False
    if any(label in note.lower() for label in LABELS) or any(source in note for source in SOURCES):
        return True
    seen = seen | {(name, field)}
    others = [
        other
        for other in list_profiles(kind)
        if other != name and re.search(rf"(?<![\w-]){re.escape(other)}(?![\w-])", note)
    ]
    if any((other, field) not in seen and _cites(kind, other, field, seen) for other in others):
        return True
    siblings = [
        sibling
        for sibling in get_profile(kind, name)
        if sibling != field and re.search(rf"\b{sibling}\b", note)
    ]
    return any(
        (name, sibling) not in seen and _cites(kind, name, sibling, seen) for sibling in siblings
    )


PRE_EXISTING = {}
"""Comments written before this check that defer without naming a source; not in this helper's
files."""

FIGURES = [
    (kind, name, field)
    for kind in KINDS
    for name, fields in list_profiles(kind).items()
    for field in fields
    if field not in WORDS and (kind, name, field) not in PRE_EXISTING
]


@pytest.mark.parametrize(
    ("kind", "name", "field"), FIGURES, ids=[f"{k}:{n}.{f}" for k, n, f in FIGURES]
)
def test_every_number_names_its_source_or_says_assumption(kind: str, name: str, field: str) -> None:
    note = field_notes(kind).get(name, {}).get(field, "")
    assert _cites(kind, name, field), (
        f"{kind} profile {name!r}, {field}: the comment beside it ({note!r}) names no known source "
        "and does not say "
        "'assumption'; cite one of tests/spec/test_catalogue.py SOURCES (or add the new source's "
        "name there)"
    )


def test_the_catalogue_has_what_issue_34_asks_for() -> None:
    for kind, names in CATALOGUE.items():
        missing = [name for name in names if name not in list_profiles(kind)]
        assert not missing, f"{kind} profiles missing from the catalogue: {missing}"
    assert get_profile("tier", "ram-ddr5")["kind"] == "ram"
    # 3D XPoint is not NAND: written in place, no erase blocks, so no garbage-collection cliff
    assert get_profile("tier", "scm-optane-p4800x")["kind"] == "scm"
    interfaces = {name: TierSpec.model_validate(name).interface for name in CATALOGUE["tier"]}
    assert interfaces["nvme-pm9a3"] == "pcie4-x4"
    assert interfaces["nvme-micron-9550"] == "pcie5-x4"
    assert interfaces["sata-ssd-d3-s4610"] == "sata-6g"
    assert TierSpec.model_validate("nvme-qlc-p5336").capacity >= 60e12


@pytest.mark.parametrize("kind", list(CATALOGUE))
def test_profiles_command_shows_every_comment(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["profiles", kind]) == 0
    out = capsys.readouterr().out
    for name, fields in list_profiles(kind).items():
        block = re.split(r"\n  (?! )", out.split(f"\n  {name}: ", 1)[1], maxsplit=1)[0].split(
            "\n      source:", 1
        )[0]
        for field, note in field_notes(kind).get(name, {}).items():
            assert note in block, f"{kind} {name}.{field}: its source comment is not shown"
        assert f"source: {fields['source']}" in out
    assert "(no source given)" not in out


def test_profiles_command_flags_a_number_without_a_source(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A profile number with no comment is shown as unsourced rather than silently."""
    import simcache.cli.devices as cli  # where the profiles command reads them

    tier = get_profile("tier", "ram-ddr5")
    monkeypatch.setattr(cli, "list_profiles", lambda kind: {"bare": tier})
    monkeypatch.setattr(cli, "field_notes", lambda kind: {"bare": {"read_latency": "a source"}})
    assert main(["profiles", "tier"]) == 0
    lines = {
        line.split("=")[0].strip(): line
        for line in capsys.readouterr().out.splitlines()
        if " = " in line
    }
    assert lines["read_latency"].endswith("a source")
    assert lines["write_latency"].endswith("(no source given)")
    assert lines["kind"].endswith("ram")  # a name, not a number: nothing to source
    assert lines["volatile"].endswith("True")


# -- links: the framing the comments derive
# ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "efficiency"),
    [
        ("25GbE", 8960 / 9038),  # jumbo TCP/IP: (9000 - 40) payload per 9000 + 38 on the wire
        ("100GbE", 8960 / 9038),
        ("200GbE", 8960 / 9038),
        # RoCEv2: 4,096 payload + Ethernet 38 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4
        ("roce-100GbE", 4096 / (4096 + 82)),
    ],
)
def test_link_payload_efficiency_is_the_framing_in_its_comment(
    name: str, efficiency: float
) -> None:
    link = LinkSpec.model_validate(name)
    payload = 1024 * (link.mtu - link.header_bytes)  # whole packets: the efficiency is exact
    wire, packets = framed_bytes(link, payload)
    assert packets == 1024
    assert payload / wire == pytest.approx(efficiency, rel=1e-12)


def test_faster_ethernet_profiles_differ_only_in_line_rate() -> None:
    """100 and 200 GbE keep 25GbE's stack latency and framing (their comments say so); only the
    rate scales."""
    base = LinkSpec.model_validate("25GbE")
    for name, rate in (("100GbE", 100e9 / 8), ("200GbE", 200e9 / 8)):
        link = LinkSpec.model_validate(name)
        assert link.bandwidth == pytest.approx(rate, rel=1e-12)
        assert (link.latency, link.mtu, link.header_bytes, link.framing_bytes) == (
            base.latency,
            base.mtu,
            base.header_bytes,
            base.framing_bytes,
        )


def test_roce_is_an_order_of_magnitude_below_kernel_tcp_per_message() -> None:
    roce, tcp = LinkSpec.model_validate("roce-100GbE"), LinkSpec.model_validate("100GbE")
    assert roce.bandwidth == tcp.bandwidth
    # 2 us against 10 us (NVIDIA forum 358441 / Larsen et al.)
    assert roce.latency * 5 <= tcp.latency


# -- tiers
# --------------------------------------------------------------------------------------------------


def test_ddr5_copy_rate_is_the_fill_buffer_bound() -> None:
    """ram-ddr5's copy rate: 16 fill buffers x 64 B per ~100 ns of DRAM latency, halved for the
    read-for-ownership."""
    tier = TierSpec.model_validate("ram-ddr5")
    single_thread_read = 16 * 64 / 100e-9
    # 5.12 GB/s rounded to 5 GB/s: a lone copy, its copy thread's channel and the shared memory
    # (1 / channel + 1 / memory)
    assert tier.read_channel_bandwidth is not None and tier.write_channel_bandwidth is not None
    lone = 1 / (1 / tier.read_channel_bandwidth + 1 / tier.read_bandwidth)
    assert lone == pytest.approx(single_thread_read / 2, rel=0.03)
    assert tier.write_bandwidth == tier.read_bandwidth
    assert tier.write_channel_bandwidth == tier.read_channel_bandwidth
    assert tier.volatile


SSDS = [name for name in CATALOGUE["tier"] if get_profile("tier", name)["kind"] in ("flash", "scm")]
"""The catalogue's drives (NAND flash, and 3D XPoint storage-class memory): their datasheets rate
IOPS and, for flash, a steady state past garbage collection."""


def qd1_seconds(tier: TierSpec, op: str, size: int = 4096) -> float:
    """An operation alone on the device (tier model v2, docs/research/tier-v2.md): command path +
    command processor (1 / iops limit) + unit time + transfer over the pipe."""
    latency, limit, bandwidth = (
        (tier.read_latency, tier.read_iops_limit, tier.read_bandwidth)
        if op == "read"
        else (tier.write_latency, tier.write_iops_limit, tier.write_bandwidth)
    )
    return (
        tier.command_overhead
        + (1 / limit if limit else 0.0)
        + latency
        + size / pipe_rate(bandwidth, None, tier.interface)
    )


@pytest.mark.parametrize(
    ("name", "op", "typical", "rounding"),
    [
        # the datasheet's typical 4 KiB latency each profile's comments derive its unit time from;
        # the tolerance is the rounding of the derived fields to whole (or tenth) microseconds,
        # summed over the terms
        ("nvme-micron-9550", "read", 60e-6, 1e-6),  # Micron 9550 MAX spec table: 60 us read
        ("nvme-micron-9550", "write", 15e-6, 0.5e-6),  # Micron 9550 MAX: 15 us write
        # Intel S4600 specification: 110 us random read Intel S4600 specification: 52 us random
        # write Intel P4800X: under 10 us typical (split assumed: 9.5 us)
        ("sata-ssd-d3-s4610", "read", 110e-6, 1.5e-6),
        ("sata-ssd-d3-s4610", "write", 52e-6, 1.5e-6),
        ("scm-optane-p4800x", "read", 9.5e-6, 0.2e-6),
        ("scm-optane-p4800x", "write", 9.5e-6, 0.2e-6),
    ],
)
def test_qd1_latency_is_the_datasheet_typical(
    name: str, op: str, typical: float, rounding: float
) -> None:
    assert qd1_seconds(TierSpec.model_validate(name), op) == pytest.approx(typical, abs=rounding)


def test_pm9a3_read_is_built_from_die_physics() -> None:
    """No PM9A3 latency figure is published; its read is the V6 die's tR (45 us) + 4 KiB at 1.2
    GB/s + ~3 us of LDPC, behind an 11 us command path: 63.6 us alone, below Ignalina's 69.7 us
    measured through md and XFS."""
    tier = TierSpec.model_validate("nvme-pm9a3")
    assert tier.read_latency == pytest.approx(45e-6 + 4096 / 1.2e9 + 3e-6, abs=0.5e-6)
    assert qd1_seconds(tier, "read") == pytest.approx(63.6e-6, abs=0.5e-6)


@pytest.mark.parametrize("name", SSDS)
def test_write_amplification_is_sequential_over_steady_state_random(name: str) -> None:
    """write_amplification = sequential write / (steady-state 4 KiB random IOPS x 4,096 B): the
    refill rate is then the datasheet's steady-state random-write rate (to the 3 significant
    digits the profile keeps)."""
    steady_state = {
        "nvme-pm9a3": 200e3,  # Samsung PM9A3 U.2 (heise)
        "nvme-micron-9550": 640e3,  # Micron 9550 MAX 6.4 TB (StorageReview)
        "nvme-qlc-p5336": 38e3,  # Solidigm D5-P5336 61.44 TB (Architecting IT)
        "sata-ssd-d3-s4610": 65e3,  # Intel S4600 specification (full span)
    }
    tier = TierSpec.model_validate(name)
    if name not in steady_state:
        # write-in-place media: no cliff
        assert tier.clean_pool is None and tier.write_amplification is None
        return
    assert gc_refill_rate(tier) == pytest.approx(steady_state[name] * 4096, rel=5e-3)


@pytest.mark.parametrize("name", ["nvme-pm9a3", "nvme-micron-9550", "nvme-qlc-p5336"])
def test_fresh_random_writes_run_at_the_sequential_rate(name: str) -> None:
    """write_iops_limit = sequential write / 4,096 B (fresh drives write 4 KiB at their program
    rate: oberstet's P3700)."""
    tier = TierSpec.model_validate(name)
    assert tier.write_iops_limit is not None
    assert tier.write_iops_limit * 4096 == pytest.approx(tier.write_bandwidth, rel=2e-3)


@pytest.mark.parametrize("name", SSDS)
def test_units_can_serve_the_rated_reads(name: str) -> None:
    """The datasheet's read IOPS is the controller's limit, not the media's: channels x dies /
    read_latency reaches it, and the interface carries 4 KiB reads at that rate."""
    tier = TierSpec.model_validate(name)
    assert tier.read_iops_limit is not None
    assert tier_units(tier) / tier.read_latency >= tier.read_iops_limit
    assert tier.interface is not None
    assert INTERFACE_RATES[tier.interface] / 4096 >= tier.read_iops_limit
