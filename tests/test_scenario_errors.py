"""Bad input gets a ScenarioError naming the file, the field path and a fix; never a library traceback."""

from __future__ import annotations

import copy
import math
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from builders import small_scenario
from strategies import to_toml

import simcache
from simcache import ScenarioError, load_scenario
from simcache.cli import main
from simcache.profiles import list_profiles

# Leaks of library internals that must never reach a user.
INTERNALS = ("pydantic", "ValidationError", "errors.pydantic.dev", "function-before", "Traceback", "constrained-")


# A small valid scenario: 2 hosts, one WB+1 group in an open loop.
base = partial(
    small_scenario,
    "errors",
    run={"seed": 1},  # the schema's default seed
    cluster={"tier": "sata-ssd-s3700", "peer_link": "1GbE"},
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
    assert text.startswith(str(path)), text
    assert error.problems, "a ScenarioError must list at least one problem"
    for leak in INTERNALS:
        assert leak not in text, f"{leak!r} leaked into the message:\n{text}"
    return error


def problem(error: ScenarioError, path_prefix: str) -> str:
    """The message of the problem whose field path starts with ``path_prefix``."""
    for where, message in error.problems:
        if where.startswith(path_prefix):
            assert where in str(error)
            return message
    raise AssertionError(f"no problem at {path_prefix!r}; problems: {error.problems}")


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
    text = str(info.value)
    assert str(path) in text
    assert "malformed TOML" in text
    assert "line 3" in text


def test_unterminated_table_header(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("[cluster\nhosts = 2\n", "utf-8")
    with pytest.raises(ScenarioError, match="malformed TOML"):
        load_scenario(path)


def test_nonexistent_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.toml"
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(path) in str(info.value)
    assert "cannot read" in str(info.value)


def test_unknown_builtin_name_lists_the_builtins() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario("no_such_scenario_anywhere")
    assert "built-in" in str(info.value)
    assert "default" in str(info.value)


def test_directory_is_not_a_scenario(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path)


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'name = "caf\xe9"\n')
    with pytest.raises(ScenarioError):
        load_scenario(path)


# -- unknown fields -------------------------------------------------------------------------------


def test_unknown_top_level_field_lists_allowed_fields(tmp_path: Path) -> None:
    data = base()
    data["clustr"] = {"hosts": 2}
    message = problem(error_for(tmp_path, data), "clustr")
    assert "unknown field 'clustr'" in message
    for allowed in ("array", "cluster", "groups", "run", "events"):
        assert allowed in message


@pytest.mark.parametrize(
    ("where", "key", "expected_path", "some_allowed"),
    [
        (("run",), "durration", "run.durration", ("duration", "warmup", "seed")),
        (("cluster",), "host", "cluster.host", ("hosts", "tier", "peer_link")),
        (("groups", 0), "polcy", "groups.0(db).polcy", ("policy", "vms_per_host", "workload")),
        (("groups", 0, "workload"), "iosp", "groups.0(db).workload.iosp", ("iops", "read_fraction", "sizes")),
    ],
)
def test_unknown_nested_field_names_path_and_allowed_fields(
    tmp_path: Path, where: tuple[str | int, ...], key: str, expected_path: str, some_allowed: tuple[str, ...]
) -> None:
    data = base()
    node: Any = data
    for part in where:
        node = node[part]
    node[key] = 1
    message = problem(error_for(tmp_path, data), expected_path)
    assert f"unknown field {key!r}" in message
    for allowed in some_allowed:
        assert allowed in message


def test_unknown_field_inside_profile_table(tmp_path: Path) -> None:
    data = base()
    data["cluster"]["tier"] = {"profile": "nvme-p3700", "write_latncy": "10us"}
    message = problem(error_for(tmp_path, data), "cluster.tier.write_latncy")
    assert "write_latency" in message


def test_several_problems_are_reported_together(tmp_path: Path) -> None:
    data = base()
    data["bogus"] = 1
    data["run"]["seed"] = -1
    data["groups"][0]["vms_per_host"] = 0
    error = error_for(tmp_path, data)
    assert len(error.problems) == 3
    assert "3 problem(s)" in str(error)


# -- impossible values ----------------------------------------------------------------------------


@pytest.mark.parametrize("bandwidth", ["-1Gbit/s", -125e6, "0MB/s"])
def test_negative_or_zero_bandwidth(tmp_path: Path, bandwidth: str | float) -> None:
    data = base()
    data["cluster"]["peer_link"] = {"profile": "1GbE", "bandwidth": bandwidth}
    message = problem(error_for(tmp_path, data), "cluster.peer_link.bandwidth")
    assert "greater than 0" in message


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("cluster", "destager", "capacity"), 0, "cluster.destager.capacity"),
        (("cluster", "destager", "capacity"), "-1GiB", "cluster.destager.capacity"),
        (("cluster", "destager", "max_batch"), "0KiB", "cluster.destager.max_batch"),
        (("groups", 0, "workload", "working_set"), "-4GiB", "groups.0(db).workload.working_set"),
        (("groups", 0, "workload", "working_set"), 0, "groups.0(db).workload.working_set"),
        (("cluster", "cache", "line"), "0B", "cluster.cache.line"),
    ],
)
def test_zero_or_negative_sizes(tmp_path: Path, path: tuple[str | int, ...], value: Any, field: str) -> None:
    data = base()
    node: Any = data
    for part in path[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    node[path[-1]] = value
    message = problem(error_for(tmp_path, data), field)
    assert "greater than 0" in message
    assert repr(value) in message or str(value) in message


@pytest.mark.parametrize("size", ["0B", "-4KiB", "0"])
def test_zero_or_negative_io_size(tmp_path: Path, size: str) -> None:
    data = base()
    data["groups"][0]["workload"]["sizes"] = {size: 1.0}
    message = problem(error_for(tmp_path, data), "groups.0(db).workload.sizes")
    assert "positive" in message
    assert size in message


def test_bad_io_size_unit(tmp_path: Path) -> None:
    data = base()
    data["groups"][0]["workload"]["sizes"] = {"4KB": 0.5, "4 lumps": 0.5}
    message = problem(error_for(tmp_path, data), "groups.0(db).workload.sizes")
    assert "lumps" in message
    assert "KiB" in message


@pytest.mark.parametrize(("hosts", "policy"), [(2, "WB+2"), (1, "WB+1"), (1, "WB+2")])
def test_more_replicas_than_peers(tmp_path: Path, hosts: int, policy: str) -> None:
    data = base()
    data["cluster"]["hosts"] = hosts
    data["groups"][0]["policy"] = policy
    message = problem(error_for(tmp_path, data), "groups.0(db).policy")
    assert policy in message
    assert f"{hosts} host(s)" in message
    assert "raise cluster.hosts" in message


@pytest.mark.parametrize("policy", ["WT", "WB+0"])
def test_policies_without_replicas_run_on_one_host(policy: str) -> None:
    data = base()
    data["cluster"]["hosts"] = 1
    data["groups"][0]["policy"] = policy
    assert load_scenario(data).cluster.hosts == 1


@pytest.mark.parametrize(
    ("path", "value", "field", "kind"),
    [
        (("cluster", "tier"), "optane-9000", "cluster.tier", "tier"),
        (("cluster", "peer_link"), "100GbE", "cluster.peer_link", "link"),
        (("cluster", "storage_link"), {"profile": "fibre"}, "cluster.storage_link", "link"),
        (("array",), "array-1x5400", "array", "array"),
        (("array",), {"profile": "array-14x7200", "drive": "sata-5400"}, "array.drive", "drive"),
    ],
)
def test_unknown_profile_lists_the_profiles(tmp_path: Path, path: tuple[str, ...], value: Any, field: str, kind: str) -> None:
    data = base()
    node: Any = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    message = problem(error_for(tmp_path, data), field)
    assert f"unknown {kind} profile" in message
    for name in list_profiles(kind):
        assert name in message


@pytest.mark.parametrize("policy", ["WB+3", "WB", "write-back", "wt"])
def test_unknown_policy_lists_policies(tmp_path: Path, policy: str) -> None:
    data = base()
    data["groups"][0]["policy"] = policy
    message = problem(error_for(tmp_path, data), "groups.0(db).policy")
    for allowed in ("WT", "WB+0", "WB+1", "WB+2"):
        assert allowed in message


@pytest.mark.parametrize(("warmup", "duration"), [("1s", "1s"), ("2s", "1s"), ("1000ms", "1s")])
def test_warmup_not_shorter_than_duration(tmp_path: Path, warmup: str, duration: str) -> None:
    data = base()
    data["run"].update(warmup=warmup, duration=duration)
    message = problem(error_for(tmp_path, data), "run")
    assert "warmup" in message
    assert "shorter than duration" in message


def test_open_loop_without_rate(tmp_path: Path) -> None:
    data = base()
    del data["groups"][0]["workload"]["iops"]
    message = problem(error_for(tmp_path, data), "groups.0(db).workload")
    assert "iops" in message
    assert "throughput" in message


def test_open_loop_with_both_rates(tmp_path: Path) -> None:
    data = base()
    data["groups"][0]["workload"]["throughput"] = "5MB/s"
    message = problem(error_for(tmp_path, data), "groups.0(db).workload")
    assert "exactly one of iops or throughput" in message


@pytest.mark.parametrize("rate", [{"iops": 100}, {"throughput": "5MB/s"}])
def test_closed_loop_with_a_rate(tmp_path: Path, rate: dict[str, Any]) -> None:
    data = base()
    data["groups"][0]["workload"] = {"mode": "closed", **rate}
    message = problem(error_for(tmp_path, data), "groups.0(db).workload")
    assert "open loop" in message
    assert "workers" in message


@pytest.mark.parametrize("hosts", [[2], [0, 5], [1, 2, 3]])
def test_host_index_out_of_range(tmp_path: Path, hosts: list[int]) -> None:
    data = base()
    data["groups"][0]["hosts"] = hosts
    message = problem(error_for(tmp_path, data), "groups.0(db).hosts")
    assert "does not exist" in message
    assert "0..1" in message


def test_group_on_no_hosts(tmp_path: Path) -> None:
    data = base()
    data["groups"][0]["hosts"] = []
    problem(error_for(tmp_path, data), "groups.0(db).hosts")


def test_negative_host_index(tmp_path: Path) -> None:
    data = base()
    data["groups"][0]["hosts"] = [-1]
    problem(error_for(tmp_path, data), "groups.0(db).hosts")


def test_vmotion_host_out_of_range(tmp_path: Path) -> None:
    data = base()
    data["events"] = [{"kind": "vmotion", "at": "0.5s", "source_host": 0, "target_host": 2}]
    message = problem(error_for(tmp_path, data), "events.0.target_host")
    assert "0..1" in message


def test_duplicate_group_names(tmp_path: Path) -> None:
    data = base()
    data["groups"].append(copy.deepcopy(data["groups"][0]))
    data["groups"][1]["policy"] = "WB+0"
    message = problem(error_for(tmp_path, data), "groups.1(db).name")
    assert "used twice" in message


def test_destager_smaller_than_largest_io(tmp_path: Path) -> None:
    data = base()
    data["cluster"]["destager"] = {"capacity": "256KiB"}
    data["groups"][0]["workload"]["sizes"] = {"4KiB": 0.9, "1MiB": 0.1}
    message = problem(error_for(tmp_path, data), "cluster.destager.capacity")
    assert "'db'" in message
    assert str(1024**2) in message
    assert "at least" in message


def test_destager_exactly_the_largest_io_is_allowed() -> None:
    data = base()
    data["cluster"]["destager"] = {"capacity": "256KiB"}
    data["groups"][0]["workload"]["sizes"] = {"256KiB": 1.0}
    assert load_scenario(data).cluster.destager.capacity == 256 * 1024


@pytest.mark.parametrize(
    ("path", "value", "field", "fragment"),
    [
        (("run", "duration"), "5 parsecs", "run.duration", "ms"),
        (("run", "duration"), "1e999s", "run.duration", "finite"),
        (("groups", 0, "workload", "think_time"), "3 jiffies", "groups.0(db).workload.think_time", "ms"),
        (("cluster", "destager", "capacity"), "lots", "cluster.destager.capacity", "4KiB"),
        (("groups", 0, "workload", "throughput"), "fast", "groups.0(db).workload.throughput", "MB/s"),
    ],
)
def test_bad_unit_strings(tmp_path: Path, path: tuple[str | int, ...], value: str, field: str, fragment: str) -> None:
    data = base()
    if path[-1] == "throughput":
        del data["groups"][0]["workload"]["iops"]
    node: Any = data
    for part in path[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    node[path[-1]] = value
    message = problem(error_for(tmp_path, data), field)
    assert fragment in message
    assert value in message


def test_wrong_types(tmp_path: Path) -> None:
    data = base()
    data["cluster"]["hosts"] = "two"
    data["groups"][0]["workload"]["read_fraction"] = 1.5
    error = error_for(tmp_path, data)
    assert "integer" in problem(error, "cluster.hosts")
    assert "less than or equal to 1" in problem(error, "groups.0(db).workload.read_fraction")


def test_missing_required_tables(tmp_path: Path) -> None:
    data = base()
    del data["cluster"]["tier"]
    del data["array"]
    error = error_for(tmp_path, data)
    assert "missing" in problem(error, "cluster.tier")
    assert "missing" in problem(error, "array")


def test_empty_groups(tmp_path: Path) -> None:
    data = base()
    data["groups"] = []
    problem(error_for(tmp_path, data), "groups")


@pytest.mark.parametrize("rate", [{"iops": math.inf}, {"throughput": math.inf}])
def test_infinite_open_loop_rate_is_rejected(tmp_path: Path, rate: dict[str, float]) -> None:
    data = base()
    data["groups"][0]["workload"] = {"mode": "open", **rate}
    error_for(tmp_path, data)


@pytest.mark.parametrize("working_set", [math.inf, "1e300TiB"])
def test_infinite_size_is_rejected(tmp_path: Path, working_set: float | str) -> None:
    data = base()
    data["groups"][0]["workload"]["working_set"] = working_set
    error_for(tmp_path, data)


# -- dicts and overrides --------------------------------------------------------------------------


def test_dict_source_is_named_dict() -> None:
    data = base()
    data["groups"][0]["policy"] = "WB+9"
    with pytest.raises(ScenarioError) as info:
        load_scenario(data)
    assert info.value.source == "<dict>"
    assert str(info.value).startswith("<dict>")


def test_loading_does_not_mutate_the_callers_dict() -> None:
    data = base()
    snapshot = copy.deepcopy(data)
    load_scenario(data)
    assert data == snapshot


@pytest.mark.parametrize(
    ("overrides", "field", "fragment"),
    [
        ({"groups.web.policy": "WT"}, "groups.web.policy", "'db'"),
        ({"groups.3.policy": "WT"}, "groups.3.policy", "0..0"),
        ({"run.duration.unit": "s"}, "run.duration.unit", "not a table"),
        ({"groups.db.policy": "WB+2"}, "groups.0(db).policy", "raise cluster.hosts"),
        ({"cluster.peer_link": "56k-modem"}, "cluster.peer_link", "unknown link profile"),
        ({"run.warmup": "5s"}, "run", "shorter than duration"),
        ({"cluster.hostz": 3}, "cluster.hostz", "hosts"),
    ],
)
def test_bad_overrides(overrides: dict[str, Any], field: str, fragment: str) -> None:
    scenario = load_scenario(base())
    with pytest.raises(ScenarioError) as info:
        scenario.with_overrides(overrides, source="<test>")
    assert info.value.source == "<test>"
    assert fragment in problem(info.value, field)


def test_good_overrides_are_validated_variants() -> None:
    scenario = load_scenario(base())
    variant = scenario.with_overrides({"groups.db.policy": "WB+0", "cluster.peer_link": "10GbE", "run.duration": "2s"})
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
    variant = scenario.with_overrides({"cluster.tier.profile": "nvme-p3700"})
    assert variant.cluster.tier.profile == "nvme-p3700"
    assert (
        variant.cluster.tier.write_bandwidth
        == load_scenario({**base(), "cluster": {**base()["cluster"], "tier": "nvme-p3700"}}).cluster.tier.write_bandwidth
    )


def test_negative_seed_argument() -> None:
    with pytest.raises(ScenarioError):
        simcache.simulate(load_scenario(base()), seed=-1, duration=0.5)


def test_duration_argument_is_validated() -> None:
    with pytest.raises(ScenarioError) as info:
        simcache.simulate(load_scenario(base()), duration=-1.0)
    assert "run.duration" in str(info.value)


# -- the CLI --------------------------------------------------------------------------------------


def test_cli_bad_scenario_prints_error_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = base()
    data["groups"][0]["policy"] = "WB+2"
    path = write(tmp_path, data)
    assert main(["run", str(path), "--duration", "0.5s"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ")
    assert str(path) in captured.err
    assert "groups.0(db).policy" in captured.err
    assert "Traceback" not in captured.err
    assert captured.out == ""


@pytest.mark.parametrize(
    "content",
    ['name = "x"\n[run\n', "[[groups]]\nname = 1\n", ""],
    ids=["malformed", "invalid", "empty"],
)
def test_cli_bad_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(content, "utf-8")
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert str(path) in err


def test_cli_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "nope.toml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert "nope.toml" in err


def test_cli_bad_duration_flag_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", "default", "--duration", "soon"])
    assert info.value.code == 2
    assert "soon" in capsys.readouterr().err
