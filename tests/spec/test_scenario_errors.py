"""Bad input gets a ScenarioError naming the file, the field path and a fix; never a library
traceback."""

from __future__ import annotations

import copy
import math
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from support.builders import small_scenario
from support.paths import ROOT
from support.strategies import to_toml

import simcache
from simcache import ScenarioError, load_scenario
from simcache.base.errors import counted
from simcache.cli.main import main
from simcache.spec import TierSpec
from simcache.spec.profiles import list_profiles

SCENARIOS = ROOT / "scenarios"  # the built-in scenarios
# Leaks of library internals that must never reach a user.
INTERNALS = (
    "pydantic",
    "ValidationError",
    "errors.pydantic.dev",
    "function-before",
    "Traceback",
    "constrained-",
)


# A small valid scenario: 2 hosts, one WB+1 group in an open loop.
base = partial(
    small_scenario,
    "errors",
    run={"seed": 1},  # the schema's default seed
    cluster={"tier": "sata-ssd-s3700-field", "peer_link": "1GbE"},
    workload={"mode": "open", "iops": 100, "sizes": {"4KiB": 1.0}},
)


def write(tmp_path: Path, data: dict[str, Any], name: str = "scenario.toml") -> Path:
    path = tmp_path / name
    path.write_text(to_toml(data), "utf-8")
    return path


def error_for(tmp_path: Path, data: dict[str, Any]) -> ScenarioError:
    """Load ``data`` from a TOML file and return the ScenarioError it must raise."""
    path = write(tmp_path, data)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    error = info.value
    text = str(error)
    assert error.source == str(path)
    assert error.problems, "a ScenarioError must list at least one problem"
    lines = [f"  {where or '(top level)'}: {message}" for where, message in error.problems]
    assert text == "\n".join(
        [f"{path}: invalid scenario ({counted(len(error.problems), 'problem')})", *lines]
    ), text
    for leak in INTERNALS:
        assert leak not in text, f"{leak!r} leaked into the message:\n{text}"
    return error


def only_problem(error: ScenarioError) -> tuple[str, str]:
    """The one (field path, message) of an error that must report exactly one problem."""
    (found,) = error.problems
    return found


POLICIES = "must be 'WT', 'WB+0', 'WB+1' or 'WB+2'"
TOP_LEVEL = "array, check, cluster, description, events, expect, groups, name, run, variants"
CLUSTER_FIELDS = (
    "cache, compression, destager, hosts, peer_fabric, peer_link, peer_links, peer_selection, "
    "storage_link, tier"
)
SIZE_UNITS = (
    "use B, KiB, MiB, GiB, TiB (1024-based; k, M, G are the same) or kB, MB, GB, TB (1000-based)"
)


def test_base_scenario_is_valid(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, base()))
    assert scenario.cluster.hosts == 2
    assert scenario.groups[0].policy == "WB+1"


# -- files ----------------------------------------------------------------------------------------


def test_malformed_toml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text('name = "x"\n[run]\nduration = = "1s"\n', "utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.source == str(path)
    assert str(info.value) == (
        f"{path}: invalid scenario (1 problem)\n  (top level): malformed TOML: Invalid "
        "value (at line 3, column 12)"
    )


def test_unterminated_table_header(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("[cluster\nhosts = 2\n", "utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.problems == [
        ("", "malformed TOML: Expected ']' at the end of a table declaration (at line 1, column 9)")
    ]


def test_nonexistent_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.toml"
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (
        f"{path}: invalid scenario (1 problem)\n  (top level): cannot read the file: No "
        "such file or directory"
    )


def test_unknown_builtin_name_lists_the_builtins() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario("no_such_scenario_anywhere")
    (where, message) = only_problem(info.value)
    assert where == ""
    assert message == "no such file and no built-in scenario of that name; built-in: " + ", ".join(
        sorted(p.stem for p in SCENARIOS.glob("*.toml"))
    )


def test_directory_is_not_a_scenario(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path)
    assert info.value.problems == [("", "not a regular file but a folder; give the path of a file")]


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'name = "caf\xe9"\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    # byte 11 is the \xe9
    assert info.value.problems == [
        ("", "not UTF-8 text (line 1, byte 11); save the scenario as UTF-8 TOML")
    ]


# -- unknown fields -------------------------------------------------------------------------------


def test_unknown_top_level_field_lists_allowed_fields(tmp_path: Path) -> None:
    data = base()
    data["clustr"] = {"hosts": 2}
    assert only_problem(error_for(tmp_path, data)) == (
        "clustr",
        f"unknown field 'clustr'; did you mean 'cluster'? (allowed here: {TOP_LEVEL})",
    )


@pytest.mark.parametrize(
    ("where", "key", "meant", "expected_path", "allowed"),
    [
        (
            ("run",),
            "durration",
            "duration",
            "run.durration",
            "duration, sample_interval, seed, warmup",
        ),
        (("cluster",), "host", "hosts", "cluster.host", CLUSTER_FIELDS),
        (
            ("groups", 0),
            "polcy",
            "policy",
            "groups.0(db).polcy",
            "hosts, metadata_batched, metadata_size, metadata_write, name, on_peer_loss, policy, "
            "replication, replication_buffer, "
            "vms_per_host, workload",
        ),
        (
            ("groups", 0, "workload"),
            "iosp",
            "iops",
            "groups.0(db).workload.iosp",
            "access, arrivals, compressibility, duty_cycle, hot_io_fraction, hot_span_fraction, "
            "iops, mode, outstanding, "
            "read_fraction, read_sizes, sequential_run, sizes, sync_serialize, think_time, "
            "throughput, trace, workers, "
            "working_set, write_sizes, zipf_theta",
        ),
    ],
)
def test_unknown_nested_field_names_path_and_allowed_fields(
    tmp_path: Path,
    where: tuple[str | int, ...],
    key: str,
    meant: str,
    expected_path: str,
    allowed: str,
) -> None:
    data = base()
    node: Any = data
    for part in where:
        node = node[part]
    node[key] = 1
    assert only_problem(error_for(tmp_path, data)) == (
        expected_path,
        f"unknown field {key!r}; did you mean {meant!r}? (allowed here: {allowed})",
    )


TIER_FIELDS = sorted({*TierSpec.model_fields, "profile"})


def test_unknown_field_inside_profile_table(tmp_path: Path) -> None:
    data = base()
    data["cluster"]["tier"] = {"profile": "nvme-p3700-field", "write_latncy": "10us"}
    assert only_problem(error_for(tmp_path, data)) == (
        "cluster.tier.write_latncy",
        "unknown field 'write_latncy'; did you mean 'write_latency'? (allowed here: "
        f"{', '.join(TIER_FIELDS)})",
    )
    # the list is the tier's fields and `profile`, in order: spelled out, the start of it reads
    assert TIER_FIELDS[:4] == ["background_request", "background_share", "capacity", "channels"]


def test_several_problems_are_reported_together(tmp_path: Path) -> None:
    data = base()
    data["bogus"] = 1
    data["run"]["seed"] = -1
    data["groups"][0]["vms_per_host"] = 0
    error = error_for(tmp_path, data)
    # unknown fields first: a typo can explain the problems after it (review 65)
    assert error.problems == [
        ("bogus", f"unknown field 'bogus'; allowed here: {TOP_LEVEL}"),
        ("run.seed", f"must be a whole number from 0 to {2**53 - 1:,} (got -1)"),
        ("groups.0(db).vms_per_host", "must be a whole number from 1 to 1,024 (got 0)"),
    ]


# -- impossible values ----------------------------------------------------------------------------


@pytest.mark.parametrize("bandwidth", ["-1Gbit/s", -125e6, "0MB/s"])
def test_negative_or_zero_bandwidth(tmp_path: Path, bandwidth: str | float) -> None:
    data = base()
    data["cluster"]["peer_link"] = {"profile": "1GbE", "bandwidth": bandwidth}
    # the bare-number hint only where the number was bare (review 67a F13)
    bare = (
        '; a bare number is bytes per second: give the unit, e.g. "10Gbit/s"'
        if isinstance(bandwidth, float)
        else ""
    )
    assert only_problem(error_for(tmp_path, data)) == (
        "cluster.peer_link.bandwidth",
        "must be at least 125kB/s; 1 Mbit/s, slower than any storage or peer network"
        f"{bare} (got {bandwidth!r})",
    )


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("cluster", "destager", "capacity"), 0, "cluster.destager.capacity"),
        (("cluster", "destager", "capacity"), "-1GiB", "cluster.destager.capacity"),
        (("cluster", "cache", "capacity"), "0KiB", "cluster.cache.capacity"),
        (("groups", 0, "workload", "working_set"), "-4GiB", "groups.0(db).workload.working_set"),
        (("groups", 0, "workload", "working_set"), 0, "groups.0(db).workload.working_set"),
    ],
)
def test_zero_or_negative_sizes(
    tmp_path: Path, path: tuple[str | int, ...], value: Any, field: str
) -> None:
    data = base()
    node: Any = data
    for part in path[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    node[path[-1]] = value
    assert only_problem(error_for(tmp_path, data)) == (
        field,
        f"must be more than 0 (got {value!r})",
    )


@pytest.mark.parametrize("size", ["0B", "-4KiB", "0"])
def test_zero_or_negative_io_size(tmp_path: Path, size: str) -> None:
    data = base()
    data["groups"][0]["workload"]["sizes"] = {size: 1.0}
    assert only_problem(error_for(tmp_path, data)) == (
        "groups.0(db).workload.sizes",
        f"I/O size {size!r} must be more than 0 bytes",
    )


def test_bad_io_size_unit(tmp_path: Path) -> None:
    data = base()
    data["groups"][0]["workload"]["sizes"] = {"4KB": 0.5, "4 lumps": 0.5}
    assert only_problem(error_for(tmp_path, data)) == (
        "groups.0(db).workload.sizes",
        f"unknown size unit 'lumps' in '4 lumps'; {SIZE_UNITS}",
    )


@pytest.mark.parametrize(("hosts", "policy"), [(2, "WB+2"), (1, "WB+1"), (1, "WB+2")])
def test_more_replicas_than_peers(tmp_path: Path, hosts: int, policy: str) -> None:
    data = base()
    data["cluster"]["hosts"] = hosts
    data["groups"][0]["policy"] = policy
    replicas = int(policy.removeprefix("WB+"))
    assert only_problem(error_for(tmp_path, data)) == (
        "groups.0(db).policy",
        f"{policy} needs {counted(replicas, 'peer host')} but the cluster has "
        f"{counted(hosts, 'host')} ({counted(hosts - 1, 'peer')}); "
        f"raise cluster.hosts to at least {replicas + 1} or use a policy with fewer replicas",
    )


@pytest.mark.parametrize("policy", ["WT", "WB+0"])
def test_policies_without_replicas_run_on_one_host(policy: str) -> None:
    data = base()
    data["cluster"]["hosts"] = 1
    data["groups"][0]["policy"] = policy
    assert load_scenario(data).cluster.hosts == 1


@pytest.mark.parametrize(
    ("path", "value", "field", "kind", "name", "got"),
    [
        (
            ("cluster", "tier"),
            "optane-9000",
            "cluster.tier",
            "tier",
            "optane-9000",
            " (got 'optane-9000')",
        ),
        # (a name that reads as a line rate, "800GbE", is told how to write a link of that
        # rate: test_a_link_named_by_its_line_rate_is_told_how_to_write_one)
        (
            ("cluster", "peer_link"),
            "omni-path",
            "cluster.peer_link",
            "link",
            "omni-path",
            " (got 'omni-path')",
        ),
        # a table is not echoed
        (
            ("cluster", "storage_link"),
            {"profile": "fibre"},
            "cluster.storage_link",
            "link",
            "fibre",
            "",
        ),
        (("array",), "array-1x5400", "array", "array", "array-1x5400", " (got 'array-1x5400')"),
        (
            ("array",),
            {"profile": "array-14x7200", "drive": "sata-5400"},
            "array.drive",
            "drive",
            "sata-5400",
            " (got 'sata-5400')",
        ),
    ],
)
def test_unknown_profile_lists_the_profiles(
    tmp_path: Path, path: tuple[str, ...], value: Any, field: str, kind: str, name: str, got: str
) -> None:
    data = base()
    node: Any = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    profiles = ", ".join(list_profiles(kind))
    assert only_problem(error_for(tmp_path, data)) == (
        field,
        f"unknown {kind} profile {name!r}; built-in {kind} profiles: {profiles}{got}",
    )


@pytest.mark.parametrize("policy", ["WB+3", "WB", "write-back", "wt"])
def test_unknown_policy_lists_policies(tmp_path: Path, policy: str) -> None:
    data = base()
    data["groups"][0]["policy"] = policy
    assert only_problem(error_for(tmp_path, data)) == (
        "groups.0(db).policy",
        f"{POLICIES} (got {policy!r})",
    )


@pytest.mark.parametrize(("warmup", "warmup_s"), [("1s", 1.0), ("2s", 2.0), ("1000ms", 1.0)])
def test_warmup_not_shorter_than_duration(tmp_path: Path, warmup: str, warmup_s: float) -> None:
    data = base()
    data["run"].update(warmup=warmup, duration="1s")
    assert only_problem(error_for(tmp_path, data)) == (
        "run",
        f"warmup ({warmup_s}s) must be shorter than duration (1.0s)",
    )


EXACTLY_ONE_RATE = (
    'an open-loop workload needs exactly one of iops or throughput (e.g. throughput = "5MB/s")'
)


def test_open_loop_without_rate(tmp_path: Path) -> None:
    data = base()
    del data["groups"][0]["workload"]["iops"]
    assert only_problem(error_for(tmp_path, data)) == ("groups.0(db).workload", EXACTLY_ONE_RATE)


def test_open_loop_with_both_rates(tmp_path: Path) -> None:
    data = base()
    data["groups"][0]["workload"]["throughput"] = "5MB/s"
    assert only_problem(error_for(tmp_path, data)) == ("groups.0(db).workload", EXACTLY_ONE_RATE)


@pytest.mark.parametrize("rate", [{"iops": 100}, {"throughput": "5MB/s"}])
def test_closed_loop_with_a_rate(tmp_path: Path, rate: dict[str, Any]) -> None:
    data = base()
    data["groups"][0]["workload"] = {"mode": "closed", **rate}
    assert only_problem(error_for(tmp_path, data)) == (
        "groups.0(db).workload",
        "iops/throughput set the rate of an open loop; for a closed loop use workers and "
        'outstanding, or set mode = "open"',
    )


@pytest.mark.parametrize(("hosts", "missing"), [([2], [2]), ([0, 5], [5]), ([1, 2, 3], [2, 3])])
def test_host_index_out_of_range(tmp_path: Path, hosts: list[int], missing: list[int]) -> None:
    """One problem for each index beyond the cluster's two hosts."""
    data = base()
    data["groups"][0]["hosts"] = hosts
    assert error_for(tmp_path, data).problems == [
        ("groups.0(db).hosts", f"host index {i} does not exist; hosts are 0..1") for i in missing
    ]


def test_group_on_no_hosts(tmp_path: Path) -> None:
    data = base()
    data["groups"][0]["hosts"] = []
    assert only_problem(error_for(tmp_path, data)) == (
        "groups.0(db).hosts",
        "needs at least 1 entry (got [])",
    )


def test_negative_host_index(tmp_path: Path) -> None:
    data = base()
    data["groups"][0]["hosts"] = [-1]
    assert only_problem(error_for(tmp_path, data)) == (
        "groups.0(db).hosts.0",
        "must be a whole number from 0 to 255 (got -1)",
    )


def test_vmotion_host_out_of_range(tmp_path: Path) -> None:
    data = base()
    data["events"] = [{"kind": "vmotion", "at": "0.5s", "source_host": 0, "target_host": 2}]
    assert only_problem(error_for(tmp_path, data)) == (
        "events.0.target_host",
        "host index 2 does not exist; hosts are 0..1",
    )


def test_duplicate_group_names(tmp_path: Path) -> None:
    data = base()
    data["groups"].append(copy.deepcopy(data["groups"][0]))
    data["groups"][1]["policy"] = "WB+0"
    assert only_problem(error_for(tmp_path, data)) == (
        "groups.1(db).name",
        "group name 'db' is used twice; names must be unique",
    )


def test_destager_smaller_than_largest_io(tmp_path: Path) -> None:
    data = base()
    data["cluster"]["destager"] = {"capacity": "256KiB"}
    data["groups"][0]["workload"]["sizes"] = {"4KiB": 0.9, "1MiB": 0.1}
    assert only_problem(error_for(tmp_path, data)) == (
        "cluster.destager.capacity",
        f"the buffer ({256 * 1024} bytes) is smaller than the largest write of group 'db' "
        f"({1024**2} bytes); make it at least that large",
    )


def test_destager_exactly_the_largest_io_is_allowed() -> None:
    data = base()
    data["cluster"]["destager"] = {"capacity": "256KiB"}
    data["groups"][0]["workload"]["sizes"] = {"256KiB": 1.0}
    assert load_scenario(data).cluster.destager.capacity == 256 * 1024


@pytest.mark.parametrize(
    ("path", "value", "field", "message"),
    [
        (
            ("run", "duration"),
            "5 parsecs",
            "run.duration",
            "unknown time unit 'parsecs' in '5 parsecs'; use ns, us (or µs), ms, s, min, h or "
            "d (days)",
        ),
        (("run", "duration"), "1e999s", "run.duration", "time '1e999s' is not a finite number"),
        (
            ("groups", 0, "workload", "think_time"),
            "3 jiffies",
            "groups.0(db).workload.think_time",
            "unknown time unit 'jiffies' in '3 jiffies'; use ns, us (or µs), ms, s, min, h or "
            "d (days)",
        ),
        (
            ("cluster", "destager", "capacity"),
            "lots",
            "cluster.destager.capacity",
            'cannot read \'lots\' as a size; write it like 4096, "4KiB", "256k", "1.5GB"',
        ),
        (
            ("groups", 0, "workload", "throughput"),
            "fast",
            "groups.0(db).workload.throughput",
            'cannot read \'fast\' as a rate; write it like 125e6, "125MB/s", "1Gbit/s", "10GbE", '
            '"400MiB/s"',
        ),
    ],
)
def test_bad_unit_strings(
    tmp_path: Path, path: tuple[str | int, ...], value: str, field: str, message: str
) -> None:
    data = base()
    if path[-1] == "throughput":
        del data["groups"][0]["workload"]["iops"]
    node: Any = data
    for part in path[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    node[path[-1]] = value
    assert only_problem(error_for(tmp_path, data)) == (field, f"{message} (got {value!r})")


def test_wrong_types(tmp_path: Path) -> None:
    data = base()
    data["cluster"]["hosts"] = "two"
    data["groups"][0]["workload"]["read_fraction"] = 1.5
    assert error_for(tmp_path, data).problems == [
        ("cluster.hosts", "must be a whole number, e.g. 4 (got 'two')"),
        (
            "groups.0(db).workload.read_fraction",
            "must be at most 1; a fraction of the whole: write 0.6 for 60% (got 1.5)",
        ),
    ]


def test_missing_required_tables(tmp_path: Path) -> None:
    data = base()
    del data["cluster"]["tier"]
    del data["array"]
    assert error_for(tmp_path, data).problems == [
        ("cluster.tier", "required field is missing"),
        ("array", "required field is missing"),
    ]


def test_empty_groups(tmp_path: Path) -> None:
    data = base()
    data["groups"] = []
    assert only_problem(error_for(tmp_path, data)) == ("groups", "needs at least 1 entry (got [])")


@pytest.mark.parametrize(
    ("rate", "problem"),
    [
        (
            {"iops": math.inf},
            (
                "groups.0(db).workload.iops",
                "must be a finite number, not nan or inf; a number, e.g. 0.5 or 100 (got inf)",
            ),
        ),
        (
            {"throughput": math.inf},
            (
                "groups.0(db).workload.throughput",
                "rate inf is out of range (not a finite number) (got inf)",
            ),
        ),
    ],
)
def test_infinite_open_loop_rate_is_rejected(
    tmp_path: Path, rate: dict[str, float], problem: tuple[str, str]
) -> None:
    data = base()
    data["groups"][0]["workload"] = {"mode": "open", **rate}
    assert only_problem(error_for(tmp_path, data)) == problem


@pytest.mark.parametrize(
    ("working_set", "message"),
    [
        (math.inf, "size inf is out of range (not a finite number) (got inf)"),
        ("1e300TiB", "size '1e300TiB' is out of range (not a finite number) (got '1e300TiB')"),
    ],
)
def test_infinite_size_is_rejected(tmp_path: Path, working_set: float | str, message: str) -> None:
    data = base()
    data["groups"][0]["workload"]["working_set"] = working_set
    assert only_problem(error_for(tmp_path, data)) == ("groups.0(db).workload.working_set", message)


# -- dicts and overrides --------------------------------------------------------------------------


def test_dict_source_is_named_dict() -> None:
    data = base()
    data["groups"][0]["policy"] = "WB+9"
    with pytest.raises(ScenarioError) as info:
        load_scenario(data)
    assert info.value.source == "<dict>"
    assert str(info.value) == (
        f"<dict>: invalid scenario (1 problem)\n  groups.0(db).policy: {POLICIES} (got 'WB+9')"
    )


def test_loading_does_not_mutate_the_callers_dict() -> None:
    data = base()
    snapshot = copy.deepcopy(data)
    load_scenario(data)
    assert data == snapshot


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        (
            {"groups.web.policy": "WT"},
            "groups.web.policy",
            "no item 'web'; use an index 0..0 or one of ['db']",
        ),
        (
            {"groups.3.policy": "WT"},
            "groups.3.policy",
            "no item '3'; use an index 0..0 or one of ['db']",
        ),
        ({"run.duration.unit": "s"}, "run.duration.unit", "run.duration is a value, not a table"),
        (
            {"groups.db.policy": "WB+2"},
            "groups.0(db).policy",
            "WB+2 needs 2 peer hosts but the cluster has 2 hosts (1 peer); raise "
            "cluster.hosts to at least 3 "
            "or use a policy with fewer replicas",
        ),
        (
            {"cluster.peer_link": "56k-modem"},
            "cluster.peer_link",
            "unknown link profile '56k-modem'; built-in link profiles: "
            f"{', '.join(list_profiles('link'))} (got '56k-modem')",
        ),
        (
            {"run.warmup": "5s"},
            "run",
            "warmup (5.0s) must be shorter than duration (1.0s)",
        ),
        (
            {"cluster.hostz": 3},
            "cluster.hostz",
            f"unknown field 'hostz'; did you mean 'hosts'? (allowed here: {CLUSTER_FIELDS})",
        ),
    ],
)
def test_bad_overrides(overrides: dict[str, Any], field: str, message: str) -> None:
    scenario = load_scenario(base())
    with pytest.raises(ScenarioError) as info:
        scenario.with_overrides(overrides, source="<test>")
    assert info.value.source == "<test>"
    assert only_problem(info.value) == (field, message)


def test_good_overrides_are_validated_variants() -> None:
    scenario = load_scenario(base())
    variant = scenario.with_overrides(
        {"groups.db.policy": "WB+0", "cluster.peer_link": "10GbE", "run.duration": "2s"}
    )
    assert variant.groups[0].policy == "WB+0"
    assert variant.cluster.peer_link.bandwidth == pytest.approx(1.25e9)
    assert variant.run.duration == 2.0
    assert scenario.groups[0].policy == "WB+1", "the original must be unchanged"


def test_override_a_single_profile_field() -> None:
    scenario = load_scenario(base())
    variant = scenario.with_overrides({"cluster.peer_link.mtu": 9000})
    assert variant.cluster.peer_link.mtu == 9000
    assert variant.cluster.peer_link.bandwidth == scenario.cluster.peer_link.bandwidth


def test_override_profile_name_switches_its_values() -> None:
    scenario = load_scenario(base())
    variant = scenario.with_overrides({"cluster.tier.profile": "nvme-p3700-field"})
    assert variant.cluster.tier.profile == "nvme-p3700-field"
    assert (
        variant.cluster.tier.write_bandwidth
        == load_scenario(
            {**base(), "cluster": {**base()["cluster"], "tier": "nvme-p3700-field"}}
        ).cluster.tier.write_bandwidth
    )


def test_negative_seed_argument() -> None:
    with pytest.raises(ScenarioError) as info:
        simcache.simulate(load_scenario(base()), seed=-1, duration=0.5)
    assert info.value.source == "simulate(seed=...)"
    assert info.value.problems == [
        ("run.seed", f"must be a whole number from 0 to {2**53 - 1:,} (got -1)")
    ]


def test_duration_argument_is_validated() -> None:
    with pytest.raises(ScenarioError) as info:
        simcache.simulate(load_scenario(base()), duration=-1.0)
    assert info.value.source == "the duration argument (simulate(duration=...), CLI --duration)"
    # Only the duration is reported: a duration that cannot run does not scale the warm-up.
    assert info.value.problems == [("run.duration", "must be more than 0 (got -1.0)")]


# -- the CLI --------------------------------------------------------------------------------------


def test_cli_bad_scenario_prints_error_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = base()
    data["groups"][0]["policy"] = "WB+2"
    path = write(tmp_path, data)
    assert main(["run", str(path), "--duration", "0.5s"]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"error: {path}: invalid scenario (1 problem)\n  groups.0(db).policy: WB+2 needs 2 peer "
        "hosts but the cluster has "
        "2 hosts (1 peer); raise cluster.hosts to at least 3 or use a policy with fewer "
        "replicas\n"
    )
    assert captured.out == ""


@pytest.mark.parametrize(
    ("content", "problems"),
    [
        (
            'name = "x"\n[run\n',
            [
                "(top level): malformed TOML: Expected ']' at the end of a table declaration (at "
                "line 2, column 5)"
            ],
        ),
        (
            "[[groups]]\nname = 1\n",
            [
                "cluster: required field is missing",
                "array: required field is missing",
                'groups.0(1).name: must be text in quotes, e.g. "db" (got 1)',
            ],
        ),
        (
            "",
            [
                "cluster: required field is missing",
                "array: required field is missing",
                "groups: required field is missing",
            ],
        ),
    ],
    ids=["malformed", "invalid", "empty"],
)
def test_cli_bad_files_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, problems: list[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(content, "utf-8")
    assert main(["run", str(path)]) == 2
    lines = [
        f"error: {path}: invalid scenario ({counted(len(problems), 'problem')})",
        *(f"  {line}" for line in problems),
    ]
    assert capsys.readouterr().err == "\n".join(lines) + "\n"


def test_cli_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "nope.toml")]) == 2
    path = tmp_path / "nope.toml"
    assert capsys.readouterr().err == (
        f"error: {path}: invalid scenario (1 problem)\n  (top level): cannot read the file: "
        "No such file or directory\n"
    )


def test_cli_bad_duration_flag_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", "default", "--duration", "soon"])
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "simcache run: error: argument --duration: cannot read 'soon' as a time; write it like "
        '0.002, "2ms", "65us", "60s"'
    )


def test_a_read_cache_of_more_lines_than_the_engine_indexes(tmp_path: Path) -> None:
    """The engine's read cache keeps 4-byte log positions (at most 2^29 lines a host): a 512 GiB
    cache of 512-byte lines (2^30 lines) over the VMs' 512 GiB working sets is refused up front;
    the same cache over 8 GiB working sets can hold only their lines (2^24 a VM), and loads."""
    data = base()
    data["cluster"]["cache"] = {"line": "512B", "capacity": "512GiB"}
    data["groups"][0]["workload"]["working_set"] = "512GiB"
    field, message = only_problem(error_for(tmp_path, data))
    assert field == "cluster.cache.line"
    assert f"{1 << 30:,} lines" in message and "use larger lines" in message
    data["groups"][0]["workload"]["working_set"] = "8GiB"
    load_scenario(write(tmp_path, data))


@pytest.mark.parametrize(
    ("field", "value", "meant"),
    [
        ("peer_link", "100Gbe", "100GbE"),  # case only
        ("peer_link", "10gbe", "10GbE"),
        ("tier", "nvme-pm9a", "nvme-pm9a3"),  # a slip
    ],
)
def test_a_profile_name_one_slip_away_is_suggested(
    tmp_path: Path, field: str, value: str, meant: str
) -> None:
    data = base()
    data["cluster"][field] = value
    where, message = only_problem(error_for(tmp_path, data))
    assert where == f"cluster.{field}"
    assert f"; did you mean {meant!r}? built-in " in message


def test_a_link_named_by_its_line_rate_is_told_how_to_write_one() -> None:
    """Review 65: peer_link = "25Gbps" gave only the list of profiles. A name that reads as a rate
    gets the link of that rate, on the profile nearest it (its latency and framing)."""
    with pytest.raises(simcache.ScenarioError) as caught:
        simcache.load_scenario("default").with_overrides({"cluster.peer_link": "25Gbps"})
    [(field, message)] = caught.value.problems
    assert field == "cluster.peer_link"
    assert (
        "'25Gbps' is a line rate, not a profile: a link of that rate is "
        '{ profile = "25GbE", bandwidth = "25Gbps" }' in message
    )
