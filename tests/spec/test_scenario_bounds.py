"""Every number of a scenario has a physical range, every wrong input a message in the user's words,
every file a check.

Each test asserts the exact message: the file, the field as the user wrote its path, and what to
write instead.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
from support.builders import small_scenario
from support.strategies import to_toml

from simcache import ScenarioError, load_scenario
from simcache.base.files import MAX_SCENARIO_BYTES, MAX_SCENARIO_BYTES_VARIABLE
from simcache.base.names import group_name
from simcache.cli.main import main
from simcache.spec.fields import MAX_BYTES

FINITE = "must be a finite number, not nan or inf; a number, e.g. 0.5 or 100"
NOT_A_PATH = (
    "not a dotted path of field names, indices and group names (letters, digits, _ and -), e.g. "
    "cluster.peer_link or groups.db.policy"
)
TIMES = '0.002, "2ms", "65us", "60s"'
RATES = '125e6, "125MB/s", "1Gbit/s", "10GbE", "400MiB/s"'
SIZE_UNITS = (
    "use B, KiB, MiB, GiB, TiB (1024-based; k, M, G are the same) or kB, MB, GB, TB (1000-based)"
)
TOP_LEVEL = "array, check, cluster, description, events, expect, groups, name, run, variants"
# pydantic's own phrasing, which must never reach a user
JARGON = (
    "instance of",
    "valid dictionary",
    "Input should",
    "pydantic",
    "union",
    "literal_error",
    "model_type",
    "function-",
    "constrained-",
)


def base() -> dict[str, Any]:
    return small_scenario(
        "bounds",
        array={"profile": "array-14x7200"},
        workload={"mode": "open", "iops": 100, "sizes": {"4KiB": 1.0}},
    )


def put(data: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    node: Any = data
    for part in path[:-1]:
        if isinstance(part, str) and isinstance(node.get(part), str):
            node[part] = {"profile": node[part]}
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    node[path[-1]] = value
    return data


def problems_of(tmp_path: Path, data: dict[str, Any]) -> list[tuple[str, str]]:
    """The problems of ``data`` written as a TOML file and loaded; the error must name that file."""
    path = tmp_path / "bounds.toml"
    path.write_text(to_toml(data), "utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.source == str(path)
    for leak in JARGON:
        assert leak not in str(info.value), str(info.value)
    return info.value.problems


def file_problems(path: Path) -> list[tuple[str, str]]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.source == str(path)
    return info.value.problems


# -- sizes in every form --------------------------------------------------------------------------

SIZE_FIELDS = [
    ("cluster", "tier", "capacity"),
    ("cluster", "destager", "capacity"),
    ("cluster", "cache", "capacity"),
    ("groups", 0, "workload", "working_set"),
]


@pytest.mark.parametrize("path", SIZE_FIELDS, ids=lambda p: ".".join(map(str, p)))
@pytest.mark.parametrize("value", ["-4KiB", "0B", 0, -1])
def test_sizes_must_be_positive(tmp_path: Path, path: tuple[str | int, ...], value: Any) -> None:
    where = ".".join(str(p) for p in path).replace("groups.0.", "groups.0(db).")
    assert problems_of(tmp_path, put(base(), path, value)) == [
        (where, f"must be more than 0 (got {value!r})")
    ]


@pytest.mark.parametrize("path", [("cluster", "cache", "line"), ("array", "stripe")], ids=".".join)
@pytest.mark.parametrize("value", ["1B", "511B", 0, "-64KiB"])
def test_cache_lines_and_stripes_are_at_least_a_sector(
    tmp_path: Path, path: tuple[str, ...], value: Any
) -> None:
    assert problems_of(tmp_path, put(base(), path, value)) == [
        (
            ".".join(path),
            "must be at least 512 bytes; one disk sector, the smallest block a disk addresses "
            f"(got {value!r})",
        )
    ]


def test_sizes_beyond_8_pib(tmp_path: Path) -> None:
    assert problems_of(tmp_path, put(base(), ("cluster", "tier", "capacity"), 2 * MAX_BYTES)) == [
        (
            "cluster.tier.capacity",
            "must be at most 8192TiB; the largest byte count a float holds exactly (got "
            f"{2 * MAX_BYTES})",
        )
    ]


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ("-4KiB", "I/O size '-4KiB' must be more than 0 bytes (got '-4KiB')"),
        ("0B", "I/O size '0B' must be more than 0 bytes (got '0B')"),
        (
            "4 parsecs",
            f"unknown size unit 'parsecs' in '4 parsecs'; {SIZE_UNITS} (got '4 parsecs')",
        ),
        (
            "-nanMiB",
            'cannot read \'-nanMiB\' as a size; write it like 4096, "4KiB", "256k", "1.5GB" (got '
            "'-nanMiB')",
        ),
        ({"4KiB": 0.5, "-8KiB": 0.5}, "I/O size '-8KiB' must be more than 0 bytes"),
        ({"4KiB": 0.5, "0B": 0.5}, "I/O size '0B' must be more than 0 bytes"),
        (
            {"4KiB": 0.5, "4096": 0.5},
            "'4KiB' and '4096' are the same size (4,096 bytes); give each size once",
        ),
        (
            {"2GiB": 1.0},
            "I/O size '2GiB' is more than 1GiB; block devices take a few MiB at most in one I/O",
        ),
        (
            {"nan": 1.0},
            'cannot read \'nan\' as a size; write it like 4096, "4KiB", "256k", "1.5GB"',
        ),
        (
            {"inf KiB": 1.0},
            'cannot read \'inf KiB\' as a size; write it like 4096, "4KiB", "256k", "1.5GB"',
        ),
        ({}, "needs at least 1 entry"),
        (
            ["4KiB", "8KiB"],
            'a size mix is a table of sizes and their relative weights, e.g. { "8KiB" = 0.7, '
            '"64KiB" = 0.3 }, or one size alone '
            "(sizes = \"4KiB\") (got ['4KiB', '8KiB'])",
        ),
        (
            True,
            'a size mix is a table of sizes and their relative weights, e.g. { "8KiB" = 0.7, '
            '"64KiB" = 0.3 }, or one size alone '
            '(sizes = "4KiB") (got true)',
        ),
    ],
    ids=[
        "negative",
        "zero",
        "bad-unit",
        "nan",
        "negative-in-mix",
        "zero-in-mix",
        "twice",
        "too-big",
        "nan",
        "inf",
        "empty",
        "list",
        "bool",
    ],
)
def test_size_mixes(tmp_path: Path, sizes: Any, message: str) -> None:
    assert problems_of(tmp_path, put(base(), ("groups", 0, "workload", "sizes"), sizes)) == [
        ("groups.0(db).workload.sizes", message)
    ]


@pytest.mark.parametrize(
    ("weight", "message"),
    [
        (0, "must be more than 0 (got 0)"),
        (-0.5, "must be more than 0 (got -0.5)"),
        (
            1e300,
            "must be at most 1,000,000,000,000; weights are relative: 10^12 to 1 is already beyond "
            "any mix (got 1e+300)",
        ),
        (math.nan, f"{FINITE} (got nan)"),
        (True, "must be a number, not true or false; write it like 0.5 or 100 (got true)"),
    ],
)
def test_size_mix_weights(tmp_path: Path, weight: Any, message: str) -> None:
    data = put(base(), ("groups", 0, "workload", "sizes"), {"4KiB": weight})
    assert problems_of(tmp_path, data) == [("groups.0(db).workload.sizes.4KiB", message)]


# -- times, rates, counts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "where", "message"),
    [
        (
            ("run", "sample_interval"),
            "0.5ms",
            "run.sample_interval",
            "must be at least 1ms; about one disk I/O's time; finer samples show single I/Os, not "
            "load (got '0.5ms')",
        ),
        (
            ("run", "duration"),
            "1e300s",
            "run.duration",
            "must be at most 1000000s; about 11.6 days; beyond it the simulated clock cannot "
            "resolve a nanosecond (got '1e300s')",
        ),
        (
            ("groups", 0, "workload", "duty_cycle"),
            {"shape": "onoff", "on": "1us", "off": "1s"},
            "groups.0(db).workload.duty_cycle.on",
            "must be at least 1ms; the finest scale the results show (got '1us')",
        ),
        (
            ("cluster", "peer_link", "bandwidth"),
            "1e15GB/s",
            "cluster.peer_link.bandwidth",
            "must be at most 10000GB/s; beyond any bus or port; a unit is missing or wrong (got "
            "'1e15GB/s')",
        ),
        (
            # a unit was given: no word of a bare number (review 67a F13)
            ("cluster", "peer_link", "bandwidth"),
            "0.1bit/s",
            "cluster.peer_link.bandwidth",
            "must be at least 125kB/s; 1 Mbit/s, slower than any storage or peer network (got "
            "'0.1bit/s')",
        ),
        (
            ("cluster", "peer_link", "bandwidth"),
            "-10Gb/s",
            "cluster.peer_link.bandwidth",
            "must be at least 125kB/s; 1 Mbit/s, slower than any storage or peer network (got "
            "'-10Gb/s')",
        ),
        (
            # a bare number is bytes per second (review 65: bandwidth = 25, meant as 25 Gbit/s)
            ("cluster", "peer_link", "bandwidth"),
            25,
            "cluster.peer_link.bandwidth",
            "must be at least 125kB/s; 1 Mbit/s, slower than any storage or peer network; a bare "
            'number is bytes per second: give the unit, e.g. "10Gbit/s" (got 25)',
        ),
        (
            # a bare number is seconds (review 65: latency = 10, meant as 10 us)
            ("cluster", "peer_link", "latency"),
            10,
            "cluster.peer_link.latency",
            "must be at most 1s; one second one way, beyond any network a cluster runs on; a bare "
            'number is seconds: give the unit, e.g. "10us" (got 10)',
        ),
        (
            ("groups", 0, "workload", "iops"),
            1e300,
            "groups.0(db).workload.iops",
            "must be at most 100,000,000; a hundred times the fastest NVMe device (got 1e+300)",
        ),
        (
            ("cluster", "hosts"),
            10**30,
            "cluster.hosts",
            "must be a whole number from 1 to 256; a bigger cluster is beyond what one run "
            f"simulates in reasonable time (got {10**30})",
        ),
        (
            ("groups", 0, "vms_per_host"),
            10**30,
            "groups.0(db).vms_per_host",
            f"must be a whole number from 1 to 1,024; more VMs than a host runs (got {10**30})",
        ),
        (
            ("run", "seed"),
            2**53,
            "run.seed",
            f"must be a whole number from 0 to {2**53 - 1:,}; the largest whole number JSON holds "
            f"exactly (got {2**53})",
        ),
        (
            ("events",),
            [{"kind": "vmotion", "at": "0.5s", "weight": 1e9}],
            "events.0.weight",
            "must be at most 1,000; a thousand times another flow's share already takes the whole "
            "port (got 1000000000.0)",
        ),
        (
            ("groups", 0, "hosts"),
            [10**30],
            "groups.0(db).hosts.0",
            f"must be a whole number from 0 to 255; a cluster has at most 256 hosts (got {10**30})",
        ),
        (
            ("check", "seeds"),
            10**6,
            "check.seeds",
            "must be a whole number from 1 to 1,000; a thousand runs of each check (got 1000000)",
        ),
    ],
    ids=[
        "sample-interval",
        "duration",
        "duty-cycle",
        "rate-high",
        "rate-low",
        "rate-negative-with-unit",
        "rate-bare-number",
        "link-latency",
        "iops",
        "hosts",
        "vms",
        "seed",
        "weight",
        "host-index",
        "seeds",
    ],
)
def test_physical_ranges(
    tmp_path: Path, path: tuple[str | int, ...], value: Any, where: str, message: str
) -> None:
    assert problems_of(tmp_path, put(base(), path, value)) == [(where, message)]


def test_a_whole_number_of_thousands_of_digits(tmp_path: Path) -> None:
    path = tmp_path / "digits.toml"
    path.write_text(to_toml(base()) + "x = " + "9" * 5000 + "\n", "utf-8")
    assert file_problems(path) == [
        ("", "malformed TOML: a whole number of thousands of digits; no field takes one")
    ]


def test_a_huge_whole_number_where_a_float_belongs(tmp_path: Path) -> None:
    """10^400 fits Python's int but no float: it is out of range, not "not a number"."""
    assert problems_of(tmp_path, put(base(), ("groups", 0, "workload", "iops"), 10**400)) == [
        (
            "groups.0(db).workload.iops",
            "must be at most 100,000,000; a hundred times the fastest NVMe device (got a whole "
            "number of about 401 digits)",
        )
    ]


# -- NaN, infinity and booleans -------------------------------------------------------------------

NUMBER_FIELDS = [
    (("cluster", "hosts"), "cluster.hosts", "a whole number", "4"),
    (("groups", 0, "vms_per_host"), "groups.0(db).vms_per_host", "a whole number", "4"),
    (("groups", 0, "workload", "iops"), "groups.0(db).workload.iops", "a number", "0.5 or 100"),
    (
        ("groups", 0, "workload", "read_fraction"),
        "groups.0(db).workload.read_fraction",
        "a number",
        "0.5 or 100",
    ),
    (("run", "duration"), "run.duration", "a time", '0.002, "2ms", "65us", "60s"'),
    (
        ("groups", 0, "workload", "working_set"),
        "groups.0(db).workload.working_set",
        "a size",
        '4096, "4KiB", "256k", "1.5GB"',
    ),
    (
        ("cluster", "peer_link", "bandwidth"),
        "cluster.peer_link.bandwidth",
        "a rate",
        '125e6, "125MB/s", "1Gbit/s", "10GbE"',
    ),
    (("run", "seed"), "run.seed", "a whole number", "4"),
]


@pytest.mark.parametrize(
    ("path", "where", "what", "examples"), NUMBER_FIELDS, ids=[w for _, w, _, _ in NUMBER_FIELDS]
)
@pytest.mark.parametrize("value", [True, False])
def test_booleans_are_not_numbers(
    tmp_path: Path, path: tuple[str | int, ...], where: str, what: str, examples: str, value: bool
) -> None:
    assert problems_of(tmp_path, put(base(), path, value)) == [
        (
            where,
            f"must be {what}, not true or false; write it like {examples} (got "
            f"{str(value).lower()})",
        )
    ]


@pytest.mark.parametrize(
    ("path", "value", "where", "message"),
    [
        (("groups", 0, (
            "workload"
        ), "iops"), math.nan, "groups.0(db).workload.iops", f"{FINITE} (got nan)"),
        (("groups", 0, (
            "workload"
        ), "iops"), math.inf, "groups.0(db).workload.iops", f"{FINITE} (got inf)"),
        (("groups", 0, (
            "workload"
        ), "iops"), "nan", "groups.0(db).workload.iops", f"{FINITE} (got 'nan')"),
        (("run", "duration"), math.nan, "run.duration", (
            "time nan is out of range (not a finite "
            "number) (got nan)"
        )),
        (("run", "duration"), "inf", "run.duration", (
            "cannot read 'inf' as a time; write it like "
            f"{TIMES} (got 'inf')"
        )),
        (("run", "duration"), "nan s", "run.duration", (
            "cannot read 'nan s' as a time; write it "
            f"like {TIMES} (got 'nan s')"
        )),
        (("groups", 0, "workload", "working_set"), -math.inf, "groups.0(db).workload.working_set", (
            "size -inf is out of range (not a finite number) (got -inf)"
        )),
        (("cluster", "peer_link", "bandwidth"), "infGbit/s", "cluster.peer_link.bandwidth", (
            f"cannot read 'infGbit/s' as a rate; write it like {RATES} (got "
            "'infGbit/s')"
        )),
        (("groups", 0, "workload", "read_fraction"), math.nan, (
            "groups.0(db).workload.read_fraction"
        ), f"{FINITE} (got nan)"),
    ],
)  # fmt: skip
def test_nan_and_infinity_anywhere(
    tmp_path: Path, path: tuple[str | int, ...], value: Any, where: str, message: str
) -> None:
    assert problems_of(tmp_path, put(base(), path, value)) == [(where, message)]


# -- no pydantic jargon, whatever the wrong type ---------------------------------------------------

KINDS_OF_FIELD = [
    ("cluster", "hosts"),  # a count
    ("groups", 0, "workload", "iops"),  # a number
    ("groups", 0, "workload", "read_fraction"),  # a fraction
    ("groups", 0, "workload", "working_set"),  # a size
    ("run", "duration"),  # a time
    ("cluster", "peer_link", "bandwidth"),  # a rate
    ("groups", 0, "policy"),  # a choice
    ("groups", 0, "name"),  # a name
    ("groups", 0, "hosts"),  # a list of host indices
    ("groups", 0, "workload", "sizes"),  # a size mix
    ("groups", 0, "workload", "duty_cycle"),  # an optional table
    ("groups", 0, "workload", "trace"),  # an optional table
    ("cluster", "peer_link"),  # a table or a profile name
    ("cluster", "tier", "volatile"),  # a boolean
    ("run",),  # a table
    ("groups",),  # a list of tables
    ("groups", 0),  # a table in a list
    ("events",),  # a list of tagged tables
    ("variants",),  # a table of tables
    ("expect",),  # a list of checks
    ("name",),  # text
]
WRONG_VALUES = [
    True,
    "x",
    "",
    [1],
    [[]],
    {"a": 1},
    {},
    1.5,
    -1,
    0,
    math.nan,
    math.inf,
    10**30,
    "-4KiB",
    [{"kind": "x"}],
    [{}],
    None,
]


@pytest.mark.parametrize("path", KINDS_OF_FIELD, ids=lambda p: ".".join(map(str, p)))
def test_no_pydantic_jargon_for_any_wrong_type(path: tuple[str | int, ...]) -> None:
    for value in WRONG_VALUES:
        data = put(base(), path, value)
        try:
            load_scenario(data)
        except ScenarioError as exc:
            text = str(exc)
            assert not [leak for leak in JARGON if leak in text], f"{path} = {value!r}:\n{text}"
            assert all(message for _, message in exc.problems)


def test_a_wrong_table_says_what_it_takes() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(put(base(), ("cluster", "peer_link"), 5))
    assert info.value.problems == [
        (
            "cluster.peer_link",
            "must be a table of its fields or the name of a built-in link profile (simcache "
            "profiles lists them) (got 5)",
        )
    ]
    with pytest.raises(ScenarioError) as info:
        load_scenario(put(base(), ("events",), [{"kind": "reboot", "at": 1}, {"at": 1}]))
    kinds = (
        "'vmotion', 'host_failure', 'device_failure', 'peer_loss', 'link_down', 'array_degraded', "
        "'array_rebuild', "
        "'link_slow', 'device_slow'"
    )
    assert info.value.problems == [
        ("events.0", f"kind must be one of {kinds} (got 'reboot')"),
        ("events.1", f"needs a kind: one of {kinds}"),
    ]


# -- names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "where", "message"),
    [
        (
            "all",
            "groups.0(all).name",
            "'all' is reserved (the summary's row of all groups together, and what checks select "
            "by default); give the group "
            "another name (got 'all')",
        ),
        ("7", "groups.0(7).name", (
            "a group name of digits alone reads as a list index in dotted "
            "paths (groups.7.policy); add a letter (got '7')"
        )),
        ("db.main", "groups.0(db.main).name", (
            "may hold only letters, digits, _ and - (got "
            "'db.main')"
        )),
        ("db main", "groups.0(db main).name", (
            "may hold only letters, digits, _ and - (got 'db "
            "main')"
        )),
        ("", "groups.0().name", "must not be empty (got '')"),
    ],
)  # fmt: skip
def test_reserved_and_odd_group_names(tmp_path: Path, name: str, where: str, message: str) -> None:
    assert problems_of(tmp_path, put(base(), ("groups", 0, "name"), name)) == [(where, message)]


def test_a_3_mb_name_is_echoed_by_its_start(tmp_path: Path) -> None:
    name = "x" * 3_000_000  # under the 4 MiB file limit
    (problem,) = problems_of(tmp_path, put(base(), ("groups", 0, "name"), name))
    start = "x" * 97 + "..."
    assert problem == (
        f"groups.0({start}).name",
        f"may be at most 64 characters long (got '{'x' * 95}'...)",
    )
    assert len(problem[0]) < 150 and len(problem[1]) < 160


def test_duplicate_names(tmp_path: Path) -> None:
    data = base()
    data["groups"].append({**data["groups"][0], "policy": "WB+0"})
    data["expect"] = [
        {"name": "c", "metric": "mean_ms", "at_most": 5},
        {"name": "c", "metric": "mean_ms", "at_most": 6},
    ]
    assert problems_of(tmp_path, data) == [
        ("groups.1(db).name", "group name 'db' is used twice; names must be unique"),
        ("expect.1(c).name", "check name 'c' is used twice; names must be unique"),
    ]


@pytest.mark.parametrize(
    ("variants", "problem"),
    [
        ({"x": {"": 1}}, ("variants.x.''", NOT_A_PATH)),
        ({"x": {"run..seed": 2}}, ("variants.x.'run..seed'", NOT_A_PATH)),
        ({"x": {"run.seed$": 2}}, ("variants.x.'run.seed$'", NOT_A_PATH)),
        ({"x": {"nowhere.at.all": 1}}, ("variants.x.nowhere", (
            "unknown field 'nowhere'; allowed "
            f"here: {TOP_LEVEL}"
        ))),
        ({"x": {"groups.web.policy": "WT"}}, ("variants.x.groups.web.policy", (
            "no item 'web'; use "
            "an index 0..0 or one of ['db']"
        ))),
        ({"a.b": {"run.seed": 2}}, ("variants.'a.b'", (
            "a variant name is 1 to 64 letters, digits, "
            "_ and -, e.g. [variants.ib-sdr] (got 'a.b')"
        ))),
        ({"x": 5}, ("variants.x", "must be a table, e.g. { name = value } (got 5)")),
        ({"base": {"run.seed": 2}}, ("variants.base", (
            "'base' means the scenario as written; give "
            "the variant another name"
        ))),
    ],
    ids=["empty-path", (
        "empty-part"
    ), "odd-char", "nowhere", "no-group", "dotted-name", "not-a-table", "base"],
)  # fmt: skip
def test_variant_names_and_paths(
    tmp_path: Path, variants: dict[str, Any], problem: tuple[str, str]
) -> None:
    assert problems_of(tmp_path, put(base(), ("variants",), variants)) == [problem]


def test_imported_group_names_are_valid_names() -> None:
    used: set[str] = set()
    assert [group_name(label, used) for label in ("sda.1", "all", "0", "8,0", "sda.1")] == [
        "sda_1",
        "device_all",
        "device_0",
        "8_0",
        "sda_1_2",
    ]


# -- files ----------------------------------------------------------------------------------------


def test_dev_zero_is_refused_by_its_kind() -> None:
    assert file_problems(Path("/dev/zero")) == [
        (
            "",
            "not a regular file but a character device (like /dev/zero), which may never end; give "
            "the path of a file",
        )
    ]


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    assert file_problems(fifo) == [
        (
            "",
            "not a regular file but a named pipe (FIFO), which would wait for a writer; give the "
            "path of a file",
        )
    ]


def test_a_folder_is_refused(tmp_path: Path) -> None:
    assert file_problems(tmp_path) == [
        ("", "not a regular file but a folder; give the path of a file")
    ]


def test_size_limit_names_size_limit_and_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.toml"
    path.write_text(to_toml(base()) + "# " + "x" * 2000 + "\n", "utf-8")
    size = path.stat().st_size
    monkeypatch.setenv(MAX_SCENARIO_BYTES_VARIABLE, "1KiB")
    assert file_problems(path) == [
        (
            "",
            f"the file is {size:,} bytes ({size / 1024:.3g}KiB); the limit is 1,024 bytes (1KiB); "
            "a scenario is a few KiB; "
            "set SIMCACHE_MAX_SCENARIO_BYTES to read a bigger one",
        )
    ]
    monkeypatch.setenv(MAX_SCENARIO_BYTES_VARIABLE, "64KiB")
    assert load_scenario(path).name == "bounds"
    monkeypatch.setenv(MAX_SCENARIO_BYTES_VARIABLE, "lots")
    assert file_problems(path) == [
        (
            "",
            "SIMCACHE_MAX_SCENARIO_BYTES: cannot read 'lots' as a size; write it like 4096, "
            '"4KiB", "256k", "1.5GB"',
        )
    ]
    assert MAX_SCENARIO_BYTES == 4 * 1024**2


def test_cli_refuses_dev_zero_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "/dev/zero"]) == 2
    assert capsys.readouterr().err == (
        "error: /dev/zero: invalid scenario (1 problem)\n"
        "  (top level): not a regular file but a character device (like /dev/zero), which may "
        "never end; give the path of a file\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 10_000 + "]" * 10_000,
        "x = " + "{a = " * 10_000 + "1" + "}" * 10_000,
        # parses, then is too deep to copy (fuzz finding F2)
        "name = {" + ".".join(["a"] * 1000) + " = 1}",
    ],
    ids=["arrays", "tables", "dotted-key"],
)
def test_deep_nesting_in_a_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(text + "\n", "utf-8")
    assert file_problems(path) == [
        (
            "",
            "tables or arrays nested too deeply; a scenario nests a few levels "
            "(groups.0.workload.duty_cycle)",
        )
    ]


def test_deep_nesting_in_a_dict() -> None:
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ScenarioError) as info:
        load_scenario(put(base(), ("description",), deep))
    assert info.value.problems == [
        (
            "",
            "tables or arrays nested too deeply; a scenario nests a few levels "
            "(groups.0.workload.duty_cycle)",
        )
    ]


def test_non_utf8_names_line_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'# scenario\nname = "caf\xe9"\n')
    assert file_problems(path) == [
        ("", "not UTF-8 text (line 2, byte 22); save the scenario as UTF-8 TOML")
    ]


def test_sweep_file_is_checked_like_a_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "/dev/zero"]) == 2
    assert capsys.readouterr().err.endswith(
        "(top level): not a regular file but a character device (like /dev/zero), which may never "
        "end; give the path of a file\n"
    )


HUGE = "y" * 10_000_000


@pytest.mark.parametrize(
    "path",
    [
        ("name",),
        ("groups", 0, "name"),
        ("groups", 0, "policy"),
        ("cluster", "tier"),
        ("cluster", "peer_link", "latency"),
        ("groups", 0, "workload", "working_set"),
        ("groups", 0, "workload", "throughput"),
        ("groups", 0, "workload", "access"),
        ("groups", 0, "workload", "trace"),
        ("variants",),
        ("expect",),
    ],
    ids=lambda p: ".".join(map(str, p)),
)
def test_a_10_mb_string_in_any_field_is_echoed_briefly(path: tuple[str | int, ...]) -> None:
    """Whatever field a 10 MB string lands in, each problem quotes at most about 100 characters of
    it."""
    value: Any = HUGE
    if path[-1] == "trace":
        value = {"path": HUGE, "devices": [HUGE]}
    elif path == ("variants",):
        value = {HUGE: {"run.seed": 2}, "x": {HUGE: 1}}
    elif path == ("expect",):
        value = [{"name": HUGE, "metric": HUGE, "group": HUGE, "at_most": HUGE}]
    with pytest.raises(ScenarioError) as info:
        load_scenario(put(base(), path, value))
    for where, message in info.value.problems:
        assert len(where) <= 150 and len(message) <= 400, (where[:200], message[:500])


# -- VMs per host ---------------------------------------------------------------------------------


def test_more_vms_on_a_host_than_a_hypervisor_runs(tmp_path: Path) -> None:
    # 600 + 425 = 1,025 VMs on host 1 (host 0 has 600): one more than vSphere 8's and Hyper-V 2022's
    # 1,024 per host.
    data = base()
    workload = data["groups"][0]["workload"]
    data["groups"] = [
        {"name": "db", "policy": "WB+1", "vms_per_host": 600, "workload": workload},
        {"name": "web", "policy": "WT", "hosts": [1], "vms_per_host": 425, "workload": workload},
    ]
    assert problems_of(tmp_path, data) == [
        (
            "groups",
            "host 1 runs 1,025 VMs (2 groups: 'db', 'web'), more than the 1,024 a hypervisor runs "
            "on one host (vSphere 8 and "
            "Hyper-V 2022 maximums); lower vms_per_host, spread the groups over more hosts "
            "(groups.hosts) or add hosts",
        )
    ]
    data["groups"][1]["vms_per_host"] = 424  # 1,024 on host 1: allowed
    path = tmp_path / "full.toml"
    path.write_text(to_toml(data), "utf-8")
    assert load_scenario(path).groups[1].vms_per_host == 424


def test_a_list_of_names_in_a_message_stops_at_twelve(tmp_path: Path) -> None:
    # 30 groups and a check on a group that does not exist: the message names 12 and counts the rest
    # (a fuzzed file of 1,003 groups made a 5,939-character message).
    data = base()
    first = data["groups"][0]
    data["groups"] = [{**first, "name": f"g{i}", "vms_per_host": 1} for i in range(30)]
    data["expect"] = [{"name": "x", "group": "nosuch", "metric": "p99_ms", "at_most": "5ms"}]
    assert problems_of(tmp_path, data) == [
        (
            "expect.0(x).group",
            "no group 'nosuch'; use all or one of g0, g1, g2, g3, g4, g5, g6, g7, g8, g9, g10, g11 "
            "and 18 more",
        )
    ]


def test_at_most_256_groups(tmp_path: Path) -> None:
    data = base()
    first = data["groups"][0]
    data["groups"] = [{**first, "name": f"g{i}", "vms_per_host": 1} for i in range(257)]
    assert problems_of(tmp_path, data) == [
        (
            "groups",
            "may have at most 256 entries (got 257): a group is a class of alike VMs; give a group "
            "more VMs with "
            "vms_per_host instead of repeating it",
        )
    ]


def test_too_many_groups_are_refused_before_any_group_is_read(tmp_path: Path) -> None:
    # A fuzzed 10 MB file (1,000 more groups, each with a value wrapped 5,000 deep) took over 5 s of
    # CPU to copy and validate before its length refused it. Now the length is checked first: the
    # members here are all invalid (an unknown field, a nesting too deep to copy), and only the
    # length is reported.
    data = base()
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    data["groups"] = [{"name": f"g{i}", "nosuch": deep} for i in range(300)]
    with pytest.raises(ScenarioError) as caught:
        load_scenario(data)
    assert caught.value.problems == [
        (
            "groups",
            "may have at most 256 entries (got 300): a group is a class of alike VMs; give a group "
            "more VMs with "
            "vms_per_host instead of repeating it",
        )
    ]


@pytest.mark.parametrize(
    ("key", "entry", "most", "why"),
    [
        (
            "events",
            {"kind": "host_failure", "at": 1.0, "host": 0},
            10_000,
            "a run schedules a few failures or moves; split a long story into several runs",
        ),
        (
            "expect",
            {"name": "x", "metric": "p99_ms", "at_most": "5ms"},
            1_024,
            "a scenario carries a few checks per group and variant",
        ),
        (
            "variants",
            {"run.seed": 2},
            256,
            "simcache check runs every variant; sweep one parameter with simcache sweep instead",
        ),
    ],
)
def test_events_checks_and_variants_have_limits(
    tmp_path: Path, key: str, entry: dict[str, Any], most: int, why: str
) -> None:
    data = base()
    count = most + 1
    data[key] = {f"v{i}": entry for i in range(count)} if key == "variants" else [entry] * count
    assert problems_of(tmp_path, data) == [
        (key, f"may have at most {most:,} entries (got {count:,}): {why}")
    ]


@pytest.mark.parametrize("value", ["0.000512KiB", 1, "4095B", "-4KiB", "0B", 0, -1])
def test_destage_batches_of_at_least_one_block(tmp_path: Path, value: Any) -> None:
    # A fuzzed max_batch of 0.000512 KiB cut every write into one-byte destage pieces (millions of
    # them).
    data = base()
    data["cluster"]["destager"] = {"max_batch": value}
    assert problems_of(tmp_path, data) == [
        (
            "cluster.destager.max_batch",
            f"must be at least 4KiB; a destage write is at least one 4 KiB block (got {value!r})",
        )
    ]


@pytest.mark.parametrize("capacity", ["1B", "1MB", "100MB"])
def test_a_disk_drive_holds_a_stroke_of_tracks(tmp_path: Path, capacity: str) -> None:
    """A sata-7200 track is 150 MB/s x 8.33 ms = 1.25 MB: under 100 tracks (125 MB) the seek curve
    has no stroke (found by bench/fuzz.py: a 1-byte drive divided by zero fitting it)."""
    data = put(base(), ("array",), {"profile": "array-14x7200"})
    data["array"]["drive"] = {"profile": "sata-7200", "capacity": capacity}
    problems = problems_of(tmp_path, data)
    assert len(problems) == 1
    where, message = problems[0]
    assert where == "array.drive"
    assert "holds fewer than 100 tracks of 1,250,000 B" in message
    assert "give the capacity with its unit, e.g. '1TB'" in message


def test_a_disk_drive_of_a_few_gigabytes_is_a_drive(tmp_path: Path) -> None:
    """200 MB is 160 tracks: the drive is fine (the array is then too small for the VMs' working
    sets, a different problem with its own message)."""
    data = put(base(), ("array",), {"profile": "array-14x7200"})
    data["array"]["drive"] = {"profile": "sata-7200", "capacity": "200MB"}
    assert [where for where, _ in problems_of(tmp_path, data)] == ["groups"]
