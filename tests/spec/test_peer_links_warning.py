"""More peer ports than peer hosts (``cluster.peer_links`` past ``hosts - 1``): a valid scenario
that runs as written, and a :class:`~simcache.spec.ScenarioWarning` naming the file, the field,
which ports carry only vMotion streams or nothing, and the fix (a user review: the extra ports were
accepted without a word though only vMotions use them).

Why they are idle (docs/model.md, "Which peer port"): all traffic between two hosts takes one port
pair, ``(d - 1) mod peer_links`` for the peer ``d`` steps ahead around the ring
(``simcache.physics.cluster.peer_port``), and ``d`` runs from 1 to ``hosts - 1``; a vMotion's
stream ``i`` takes port ``i mod peer_links`` (multi-NIC vMotion), the one use of the others.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import Any

import pytest
from support.builders import small_scenario
from support.strategies import to_toml

import simcache
from simcache.spec import ScenarioWarning


def _vmotion(streams: int) -> dict[str, Any]:
    return {
        "kind": "vmotion",
        "at": 0.2,
        "source_host": 0,
        "target_host": 1,
        "size": "64MiB",
        "streams": streams,
    }


def _spec(hosts: int, links: int, streams: int | None = None) -> dict[str, Any]:
    """The builders' small scenario (WB+1 on every host; WB+0 on a single host) on ``hosts`` hosts
    with ``links`` peer ports each and, with ``streams``, a vMotion of that many streams."""
    spec = small_scenario(cluster={"hosts": hosts, "peer_links": links})
    if hosts == 1:
        spec["groups"][0]["policy"] = "WB+0"
    if streams is not None:
        spec["events"] = [_vmotion(streams)]
    return spec


def _notes(source: Any) -> list[ScenarioWarning]:
    """The ScenarioWarnings loading ``source`` gives (every one: no deduplication)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        simcache.load_scenario(source)
    return [w.message for w in caught if isinstance(w.message, ScenarioWarning)]


def test_a_file_with_idle_peer_ports_loads_and_its_warning_names_file_field_and_fix(
    tmp_path: Path,
) -> None:
    path = tmp_path / "two_hosts.toml"
    path.write_text(to_toml(_spec(hosts=2, links=3)))
    with pytest.warns(ScenarioWarning) as caught:
        scenario = simcache.load_scenario(path)
    assert scenario.cluster.peer_links == 3  # as written: a warning, not an error
    (warning,) = [w.message for w in caught]
    assert isinstance(warning, ScenarioWarning)
    assert (warning.source, warning.field) == (str(path), "cluster.peer_links")
    assert str(warning) == (
        f"{path}: cluster.peer_links: 3 peer ports per host but 1 peer host: all traffic between "
        "two hosts takes one port (to the peer d steps ahead around the ring, port (d - 1) mod "
        "peer_links), so replicas, remote reads and resyncs use only port 0; ports 1 to 2 carry "
        "nothing (no vMotion here); set peer_links = 1, or keep the extra ports for multi-NIC "
        "vMotion"
    )


@pytest.mark.parametrize(
    ("hosts", "links", "streams", "said", "unsaid"),
    [
        # every extra port takes a vMotion stream
        (2, 3, 4, ["use only port 0", "ports 1 to 2 carry only vMotion streams"], ["nothing"]),
        # the streams reach some of them
        (
            3,
            8,
            4,
            [
                "but 2 peer hosts",
                "use only ports 0 to 1",
                "ports 2 to 3 carry only vMotion streams",
                "ports 4 to 7 carry nothing (the vMotions' 4 streams do not reach them)",
                "set peer_links = 2,",
            ],
            [],
        ),
        (
            2,
            3,
            2,
            [
                "port 1 carries only vMotion streams",
                "port 2 carries nothing (the vMotions' 2 streams do not reach them)",
            ],
            [],
        ),
        # the replicas take every port a vMotion's streams would: those do not help
        (3, 4, 2, ["ports 2 to 3 carry nothing (the vMotions' 2 streams"], ["only vMotion"]),
        (
            1,
            2,
            None,
            ["2 peer ports on a single host", "carry nothing; set peer_links = 1 or add hosts"],
            [],
        ),
    ],
)
def test_the_warning_says_which_ports_carry_only_vmotions_and_which_nothing(
    hosts: int, links: int, streams: int | None, said: list[str], unsaid: list[str]
) -> None:
    (warning,) = _notes(_spec(hosts, links, streams))
    assert warning.source == "<dict>" and warning.field == "cluster.peer_links"
    for words in said:
        assert words in warning.message, words
    for words in unsaid:
        assert words not in warning.message, words


@pytest.mark.parametrize(("hosts", "links"), [(1, 1), (2, 1), (3, 2), (4, 3), (4, 2)])
def test_no_warning_while_every_port_can_carry_replicas(hosts: int, links: int) -> None:
    assert _notes(_spec(hosts, links)) == []


def test_a_derived_run_warns_only_of_what_its_own_changes_brought() -> None:
    """A file's variants and a run's overrides that leave the ports as they were do not repeat the
    file's warning; an override that makes ports idle warns, naming its source."""
    spec = _spec(hosts=2, links=3) | {"variants": {"busier": {"groups.db.workload.iops": 400}}}
    assert len(_notes(spec)) == 1  # the base, not its variant again
    with pytest.warns(ScenarioWarning) as caught:
        scenario = simcache.load_scenario(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScenarioWarning)
        scenario.with_overrides({"run.duration": 0.5})
        scenario.variant("busier")
    assert len(caught) == 1
    fine = simcache.load_scenario(_spec(hosts=2, links=1))
    with pytest.warns(ScenarioWarning, match=r"^<overrides>: cluster\.peer_links: 2 peer ports"):
        fine.with_overrides({"cluster.peer_links": 2})


def test_the_extra_port_carries_nothing_without_a_vmotion_and_a_vmotion_stream_with_one() -> None:
    """The warning's claim against the simulator: two hosts, two ports each, WB+1 writes and reads;
    port 1 stays idle until a vMotion of two streams sends one of them on it."""
    with pytest.warns(ScenarioWarning):
        idle = simcache.simulate(simcache.load_scenario(_spec(hosts=2, links=2)))
        moved = simcache.simulate(simcache.load_scenario(_spec(hosts=2, links=2, streams=2)))
    for host in ("host0", "host1"):
        assert (idle.series[f"util.{host}.peer1.tx"] == 0).all()
        assert (idle.series[f"util.{host}.peer1.rx"] == 0).all()
        assert idle.series[f"util.{host}.peer0.tx"].sum() > 0
    assert moved.series["util.host0.peer1.tx"].sum() > 0
    assert moved.series["util.host1.peer1.rx"].sum() > 0


def test_the_warning_crosses_a_process_boundary_whole() -> None:
    """A sweep worker's warning reaches the parent with its parts (pickled)."""
    (warning,) = _notes(_spec(hosts=2, links=2))
    again = pickle.loads(pickle.dumps(warning))
    assert (again.source, again.field, again.message, str(again)) == (
        warning.source,
        warning.field,
        warning.message,
        str(warning),
    )


def test_the_command_line_prints_the_warning_as_a_line_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `simcache estimate` on the file: the warning as "warning: <file>: <field>: ...", as errors
    # print, not Python's "path:line: ScenarioWarning: ..." with a source line under it.
    from simcache.cli.main import main

    path = tmp_path / "ports.toml"
    path.write_text(to_toml(_spec(hosts=2, links=3)))
    assert main(["estimate", str(path)]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"warning: {path}: cluster.peer_links: 3 peer ports per host")
    assert "ScenarioWarning" not in err
