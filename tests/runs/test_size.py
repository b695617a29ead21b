"""``simcache size``: costs by part, dimensions, bad input (one line naming it, nothing run),
``--json``'s shape, -o."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from support.builders import small_scenario

import simcache
from simcache.cli.main import main
from simcache.report.size_report import size_section
from simcache.results.bottleneck import component_name
from simcache.runs import size as size_module
from simcache.runs.size import size
from simcache.runs.sizing.answer import Candidate, SizeAnswer
from simcache.runs.sizing.costs import Cost, SizeError, check_prices, load_prices
from simcache.runs.sizing.space import candidate_scenarios, dominated, parse_vary
from simcache.runs.sweep import SweepProgress
from simcache.runs.targets import parse_target
from simcache.sim.control import Cancel

QUICK = {"run": {"duration": "1.5s", "warmup": "0.3s", "sample_interval": "0.1s"}}


def quick_scenario(tmp_path: Path) -> Path:
    data = small_scenario(
        workload={"mode": "open", "iops": 1500, "read_fraction": 0.0, "sizes": {"64KiB": 1.0}},
        array="array-24x15k",
        **QUICK,
    )
    from simcache.spec.dump import toml_document

    path = tmp_path / "quick.toml"
    path.write_text(
        toml_document(simcache.load_scenario(data).model_dump(mode="json"), []), "utf-8"
    )
    return path


def test_the_cost_of_the_default_cluster_is_its_parts() -> None:
    prices = load_prices()
    cost = prices.cost(simcache.load_scenario("default"))
    table = prices.data
    hosts = 4
    expected = (
        hosts * table["host"]["price"]
        + hosts * table["tiers"]["sata-ssd-s3700-field"]["price"]  # the profile's own capacity
        + hosts * table["links"]["1GbE"]["port"] * 2  # one peer port, one storage port
        + table["arrays"]["array-14x7200"]["price"]
    )
    assert cost.total == pytest.approx(expected, rel=1e-12)
    # the capacity in the price table's units, 400GB, not 373GiB (review 67a F12)
    assert [part.item for part in cost.parts][:2] == ["host", "sata-ssd-s3700-field 400GB"]


def test_capacity_and_spindles_scale_their_parts(tmp_path: Path) -> None:
    prices = load_prices()
    base = simcache.load_scenario("default")
    half = prices.cost(base.with_overrides({"cluster.tier.capacity": "200GB"}))
    more = prices.cost(base.with_overrides({"array.spindles": 16}))
    device = prices.data["tiers"]["sata-ssd-s3700-field"]["price"]
    assert half.parts[1].unit_price == pytest.approx(device / 2, rel=1e-12)
    assert more.total - prices.cost(base).total == pytest.approx(
        2 * prices.data["arrays"]["array-14x7200"]["spindle"], rel=1e-12
    )


def test_a_costs_file_overrides_prices_key_by_key(tmp_path: Path) -> None:
    own = tmp_path / "prices.toml"
    own.write_text('currency = "EUR"\n[host]\nprice = 1000\n[links.10GbE]\nport = 1\n', "utf-8")
    prices = load_prices(own)
    assert prices.currency == "EUR"
    assert prices.data["host"]["price"] == 1000 and prices.data["links"]["10GbE"]["port"] == 1
    assert prices.data["links"]["1GbE"]["port"] == load_prices().data["links"]["1GbE"]["port"]


def test_ranges_and_lists() -> None:
    assert parse_vary("cluster.hosts = 3:6").values == (3, 4, 5, 6)
    assert parse_vary("cluster.hosts = 2:8:3").values == (2, 5, 8)
    assert parse_vary("cluster.destager.capacity = 1GiB:4GiB").values == (2**30, 2**31, 2**32)
    assert parse_vary("cluster.peer_link = ['1GbE', '10GbE']").values == ("1GbE", "10GbE")
    assert parse_vary('"groups.db.policy" = ["WB+1", "WB+2"]').path == "groups.db.policy"


def test_monotone_domination() -> None:
    slow = {"cluster.peer_link": "1GbE", "groups.db.policy": "WB+1"}
    assert dominated(slow, {**slow, "cluster.peer_link": "10GbE"})
    assert not dominated({**slow, "cluster.peer_link": "10GbE"}, slow)
    assert not dominated(slow, {**slow, "groups.db.policy": "WB+2"})  # not a monotone dimension
    assert dominated({"cluster.destager.capacity": 2**30}, {"cluster.destager.capacity": 2**31})


BAD = [
    (
        ["write p99 <= 5ms"],
        ["cluster.hostz = [3, 4]"],
        None,
        "cluster.hostz: unknown field 'hostz'",
    ),
    (["write p99 <= 5ms"], ["cluster.hosts = 8:3"], None, "the range 8:3 is empty"),
    (["write p99 <= 5ms"], ["cluster.hosts = []"], None, "an empty list of values"),
    (
        ["nosuch write p99 <= 5ms"],
        ["cluster.hosts = 3:4"],
        None,
        "no group 'nosuch' in the scenario",
    ),
    (["write p99 <= 5"], ["cluster.hosts = 3:4"], None, "give the limit as a time with its unit"),
    (
        ["write p99 <= 5ms"],
        ["cluster.peer_link = ['1GbE', 'ib-fdr']"],
        None,
        "unknown link profile 'ib-fdr'",
    ),
    ([], ["cluster.hosts = 3:4"], None, "give at least one target"),
    (["write p99 <= 5ms"], [], None, "give at least one dimension"),
]


@pytest.mark.parametrize(("targets", "vary", "costs", "message"), BAD, ids=[b[3][:30] for b in BAD])
def test_bad_input_is_one_line_naming_it_and_nothing_runs(
    targets: list[str],
    vary: list[str],
    costs: str | None,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[object] = []
    monkeypatch.setattr(size_module, "simulate", lambda *a, **k: ran.append(a))
    monkeypatch.setattr(size_module, "estimate", lambda *a, **k: ran.append(a))
    with pytest.raises(SizeError) as caught:
        size("default", targets, vary, prices=None, workers=1)
    text = str(caught.value)
    assert "\n" not in text and message in text, text
    assert ran == []


def test_every_missing_price_is_named_at_once_with_a_stub_that_completes_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cluster of parts the table does not price: one error names them all (each once, though
    the dimension repeats them) and offers the tables to paste; with its zeros replaced the stub
    completes the table (review 63, item 4: four tries for a four-part NVMe cluster)."""
    ran: list[object] = []
    monkeypatch.setattr(size_module, "simulate", lambda *a, **k: ran.append(a))
    monkeypatch.setattr(size_module, "estimate", lambda *a, **k: ran.append(a))
    vary = ["cluster.peer_link = ['100GbE', '200GbE']"]
    base = simcache.load_scenario("default").with_overrides(
        {"cluster.tier": "nvme-pm9a3", "cluster.storage_link": "25GbE", "array": "afa-24x-nvme"}
    )
    with pytest.raises(SizeError) as caught:
        size(base, ["write p99 <= 5ms"], vary, workers=1)
    assert ran == []
    where = [w for w, _ in caught.value.problems]
    # (25GbE, the storage port, is priced)
    assert where == ["cluster.tier", "cluster.peer_link", "array", "cluster.peer_link"]
    # the tables to paste follow the problems, not counted among them (review 67a F12: "5
    # problem(s)" for four missing prices)
    heading, *lines = str(caught.value).splitlines()
    assert heading.endswith(": cannot size it (4 problems)"), heading
    assert caught.value.fix is not None and caught.value.fix[0] == "--costs"
    assert lines[4].startswith("  --costs: 4 prices missing; a --costs file with these tables")
    stub = caught.value.fix[1].split(":\n", 1)[1]
    tables = tomllib.loads(stub)
    assert set(tables) == {"tiers", "links", "arrays"}
    assert set(tables["links"]) == {"100GbE", "200GbE"}
    # the tier's capacity is the profile's own, so a price per drive reads right (review 65: every
    # tier's stub said 1.6 TB; a 3.84 TB drive's price was read as per 1.6 TB)
    assert tables["tiers"]["nvme-pm9a3"]["capacity"] == "3.84TB"
    filled = tmp_path / "prices.toml"
    filled.write_text(stub.replace(" = 0 ", " = 100 "), "utf-8")
    candidates = candidate_scenarios(base, [parse_vary(v) for v in vary])
    check_prices(load_prices(filled), (variant for _, variant in candidates))  # all priced now


def test_one_missing_price_is_one_problem(tmp_path: Path) -> None:
    """Not "(2 problems)": the stub to paste is no problem (review 67a F12)."""
    base = simcache.load_scenario("default").with_overrides({"cluster.tier": "nvme-pm9a3"})
    with pytest.raises(SizeError) as caught:
        check_prices(load_prices(), [base])
    heading, problem, fix, *stub = str(caught.value).splitlines()
    assert heading.endswith(": cannot size it (1 problem)"), heading
    assert problem.startswith("  cluster.tier: no price for tier profile 'nvme-pm9a3'")
    assert fix.startswith("  --costs: 1 price missing;") and stub[0] == "[tiers.nvme-pm9a3]"


def test_a_cost_part_gives_a_capacity_in_the_units_of_its_price(tmp_path: Path) -> None:
    """A drive priced and rated in decimal units (3.84TB, 800GB) is named so in its cost part, in
    the text, the JSON and the page alike, not as 3.49TiB and 745GiB (review 67a F12); a capacity
    priced in binary units stays in them."""
    own = tmp_path / "prices.toml"
    own.write_text(
        '[tiers.nvme-pm9a3]\nprice = 900\ncapacity = "3.84TB"\n'
        '[tiers.nvme-p3700]\nprice = 6000\ncapacity = "2TiB"\n',
        "utf-8",
    )
    prices = load_prices(own)
    base = simcache.load_scenario("default")

    def tier_part(**overrides: object) -> str:
        return prices.cost(base.with_overrides(overrides)).parts[1].item

    assert tier_part(**{"cluster.tier": "nvme-pm9a3"}) == "nvme-pm9a3 3.84TB"
    assert tier_part(**{"cluster.tier": "nvme-p3700-field"}) == "nvme-p3700-field 800GB"
    assert tier_part(**{"cluster.tier": "nvme-p3700-field", "cluster.tier.capacity": "1.6TB"}) == (
        "nvme-p3700-field 1.6TB"
    )
    assert tier_part(**{"cluster.tier": "nvme-p3700"}) == "nvme-p3700 1.82TiB"  # 2TB, priced 2TiB
    winner = Candidate(0, {}, prices.cost(base.with_overrides({"cluster.tier": "nvme-pm9a3"})))
    winner.verdict = "meets"
    assert winner.to_json()["cost_parts"][1]["item"] == "nvme-pm9a3 3.84TB"
    answer = SizeAnswer([winner], [parse_target("write p99 <= 5ms")], best=0)
    assert "4 x nvme-pm9a3 3.84TB at 900" in "\n".join(answer.lines())
    assert "4 x nvme-pm9a3 3.84TB at 900" in size_section(answer)


def test_an_all_flash_arrays_drives_are_flash_drives_not_spindles(tmp_path: Path) -> None:
    """In its cost parts and in the bottleneck's words of the page's run (review 67a F12: "the
    array's 24 spindles" of an all-flash array); a disk array's drives stay spindles."""
    own = tmp_path / "prices.toml"
    own.write_text(
        "[arrays.afa-24x-nvme]\nprice = 180000\nspindle = 1200\n"
        "[links.nvmeof-rdma-100GbE]\nport = 900\n",
        "utf-8",
    )
    afa = simcache.load_scenario("default").with_overrides(
        {
            "array": "afa-24x-nvme",
            "array.spindles": 26,
            "cluster.storage_link": "nvmeof-rdma-100GbE",
        }
    )
    part = load_prices(own).cost(afa).parts[-1]
    assert (part.item, part.count, part.unit_price) == ("afa-24x-nvme flash drive", 2, 1200)
    assert component_name("array", afa) == "the array's 26 flash drives"
    disks = simcache.load_scenario("default").with_overrides({"array.spindles": 15})
    assert load_prices().cost(disks).parts[-1].item == "array-14x7200 spindle"
    assert component_name("array", disks) == "the array's 15 spindles"


def test_cli_bad_input_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["size", "default", "--target", "write p99 <= 5ms", "--vary", "cluster.hosts = 5:2"])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert (
        err.count("\n") == 0 and "empty" in err and err.startswith("error: --vary: cluster.hosts:")
    )


def test_cli_json_has_best_candidates_frontier_and_the_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = quick_scenario(tmp_path)
    out = tmp_path / "size.html"
    args = [
        "size",
        str(scenario),
        "--target",
        "write p99 <= 1ms",
        "--vary",
        "cluster.peer_link = ['1GbE', '10GbE']",
        "--workers",
        "1",
        "--json",
    ]
    assert main([*args, "-o", str(out)]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert list(answer) == ["best", "candidates", "frontier"]
    assert answer["best"]["overrides"] == {"cluster.peer_link": "10GbE"}
    assert {"overrides", "cost", "verdicts"} <= set(answer["best"])
    assert all({"overrides", "cost", "verdict"} <= set(c) for c in answer["candidates"])
    assert answer["best"]["cost"] == sum(part["total"] for part in answer["best"]["cost_parts"])
    # 1GbE: estimated p99 14.8 ms > 6 x 1 ms
    assert [c["verdict"] for c in answer["candidates"]] == ["pruned", "meets"]
    assert answer["frontier"] and answer["frontier"][-1]["overrides"] == {
        "cluster.peer_link": "10GbE"
    }
    html = out.read_text("utf-8")
    assert (
        "<h1>simcache size: " in html
        and "id='best'" in html
        and "Frontier" in html
        and "Run manifest" in html
    )
    assert "http" not in html.replace("http-equiv", "")


def test_a_stopped_search_keeps_its_runs_and_a_rerun_resumes_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = quick_scenario(tmp_path)
    store = tmp_path / "size.sqlite"
    vary = [
        "cluster.peer_link = ['1GbE', '10GbE']",
        "cluster.tier = ['sata-ssd-s3700-field', 'nvme-p3700-field']",
    ]
    token = Cancel()
    seen: list[int] = []

    def stop_after_two(state: SweepProgress) -> None:
        seen.append(state.done)
        if state.done >= 2:
            token.cancel("enough")

    partial = size(
        scenario,
        ["write p99 <= 1ms"],
        vary,
        seeds=[1, 2],
        workers=1,
        store=store,
        cancel=token,
        progress=stop_after_two,
    )
    assert partial.stopped == "enough" and partial.best is None
    assert any(c.verdict == "skipped" and "stopped" in c.why for c in partial.candidates)
    full = size(scenario, ["write p99 <= 1ms"], vary, seeds=[1, 2], workers=1, store=store)
    ran: list[object] = []
    monkeypatch.setattr(size_module, "simulate", lambda *a, **k: ran.append(a))
    # every run from the store
    again = size(scenario, ["write p99 <= 1ms"], vary, seeds=[1, 2], workers=1, store=store)
    assert ran == []
    assert again.to_json() == full.to_json()


def test_a_warm_up_shorter_than_a_duty_cycle_is_said_before_anything_runs() -> None:
    token = Cancel()
    token.cancel("stopped at once")
    answer = size(
        "default",
        ["db write p99 <= 6ms"],
        ["cluster.peer_link = ['1GbE', '10GbE']"],
        workers=1,
        cancel=token,
    )
    assert answer.stopped == "stopped at once"
    assert all(c.verdict in ("skipped", "pruned") for c in answer.candidates)
    assert any(
        "group build's duty cycle has a 10 s period and the warm-up is 4 s" in note
        # the fix as a dimension, which the page's box takes (review 63, item 3)
        and note.endswith("(or add the dimension run.warmup = ['10s'])")
        for note in answer.notes
    )
    longer = simcache.load_scenario("default").with_overrides({"run.warmup": "10s"})
    assert (
        size(
            longer,
            ["db write p99 <= 6ms"],
            ["cluster.peer_link = ['1GbE']"],
            workers=1,
            cancel=token,
        ).notes
        == []
    )


def test_ctrl_c_keeps_the_finished_runs_in_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = quick_scenario(tmp_path)
    store = tmp_path / "size.sqlite"
    vary = ["cluster.peer_link = ['1GbE', '10GbE']"]
    real = size_module.simulate
    calls: list[int] = []

    def interrupted_third(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(size_module, "simulate", interrupted_third)
    with pytest.raises(size_module.SizeInterrupted) as caught:
        size(
            scenario, ["write p99 <= 1ms"], vary, seeds=[1, 2], workers=1, store=store, prune=False
        )
    assert caught.value.answer.stopped == "interrupted (Ctrl-C)"
    monkeypatch.setattr(size_module, "simulate", real)
    progress: list[SweepProgress] = []
    size(
        scenario,
        ["write p99 <= 1ms"],
        vary,
        seeds=[1, 2],
        workers=1,
        store=store,
        prune=False,
        progress=progress.append,
    )
    assert progress[1].skipped == 2  # the two runs finished before Ctrl-C come from the store


def test_a_candidates_label_shows_sizes_as_sizes() -> None:
    """A range "1GiB:4GiB" came back as capacity=1073741824 (review 63, item 9)."""
    candidate = Candidate(
        0,
        {"cluster.peer_link": "25GbE", "cluster.destager.capacity": 2**30, "cluster.hosts": 4},
        Cost((), "USD"),
    )
    assert candidate.label == (
        "cluster.peer_link=25GbE, cluster.destager.capacity=1GiB, cluster.hosts=4"
    )
