"""A ``--costs`` file in another currency than the built-in table's (review 66): sizing never adds
its prices to the built-in table's USD ones. A file that leaves parts to the built-in table is
refused before anything runs, a line per part; one that prices every part is sized in its own
currency; the JSON answer names the currency of its costs."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from support.cli import call

import simcache
from simcache.runs import size as size_module
from simcache.runs.sizing.costs import CurrencyError, SizeError, check_prices, load_prices

# the reproduction: the default scenario (4 hosts, sata-ssd-s3700-field tier, 1GbE storage link,
# array-14x7200) with a 10GbE peer link
SIZE = [
    "size",
    "default",
    "--target",
    "db write p99 <= 10ms",
    "--vary",
    "cluster.peer_link = ['10GbE']",
    "--seeds",
    "1",
    "--duration",
    "2s",
    "--workers",
    "1",
    "--json",
]
USED = ["tiers.sata-ssd-s3700-field", "links.10GbE", "links.1GbE", "arrays.array-14x7200"]
EUR_ALL = """currency = "EUR"
[host]
price = 9000
[tiers.sata-ssd-s3700-field]
price = 800
[links.10GbE]
port = 400
[links.1GbE]
port = 50
[arrays.array-14x7200]
price = 13000
"""
EUR_TOTAL = 4 * 9000 + 4 * 800 + 4 * 400 + 4 * 50 + 13000


def _default() -> simcache.Scenario:
    return simcache.load_scenario("default").with_overrides({"cluster.peer_link": "10GbE"})


def test_a_file_in_another_currency_pricing_some_parts_is_refused_part_by_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's case: EUR for the host only gave 56,840 "EUR", 20,840 of it USD."""
    ran: list[object] = []
    monkeypatch.setattr(size_module, "simulate", lambda *a, **k: ran.append(a))
    monkeypatch.setattr(size_module, "estimate", lambda *a, **k: ran.append(a))
    own = tmp_path / "eur.toml"
    own.write_text('currency = "EUR"\n[host]\nprice = 9000\n', "utf-8")
    code, out, err = call([*SIZE, "--costs", str(own)])
    assert (code, out, ran) == (2, "", [])
    lines = err.splitlines()
    assert lines[0] == (
        f"error: {own}: cannot size it: its prices would mix two currencies (4 problems)"
    ), err  # a problem per part; the tables to paste are no problem (review 67a F12: "5")
    parts = lines[1:5]
    assert [line.split(":", 1)[0].strip() for line in parts] == USED
    for line, table in zip(parts, USED, strict=True):
        assert str(own) in line and "no EUR price" in line and "USD" in line, line
        assert f"[{table}]" in line and 'set its currency = "USD"' in line, line
    assert "cluster.hosts" not in err  # the file prices the host
    # the tables to paste: with their zeros replaced, the file prices every part
    stub = err.split(":\n", 1)[1]
    assert set(tomllib.loads(stub)) == {"tiers", "links", "arrays"}
    own.write_text(own.read_text("utf-8") + stub.replace(" = 0 ", " = 100 "), "utf-8")
    check_prices(load_prices(own), [_default()])


def test_the_cost_of_a_mixed_configuration_is_refused_not_added(tmp_path: Path) -> None:
    """:meth:`PriceTable.cost` itself never totals two currencies, even without check_prices."""
    prices = load_prices(_write(tmp_path, EUR_ALL.replace("[links.1GbE]\nport = 50\n", "")))
    with pytest.raises(CurrencyError) as caught:
        prices.cost(_default())
    assert [where for where, _ in caught.value.problems] == ["links.1GbE"]
    assert caught.value.fix is not None and caught.value.fix[0] == "--costs"
    assert "(1 problem)" in str(caught.value) and "1 part with no EUR price" in str(caught.value)
    # an array's spindle price is used only for another drive count: then it must be the file's
    full = load_prices(_write(tmp_path, EUR_ALL))
    with pytest.raises(CurrencyError, match=r"spindle = 300 USD"):
        full.cost(_default().with_overrides({"array.spindles": 16}))
    assert isinstance(caught.value, SizeError)  # reported as any bad sizing input


def test_a_file_in_another_currency_pricing_every_part_is_sized_in_it(tmp_path: Path) -> None:
    prices = load_prices(_write(tmp_path, EUR_ALL))
    check_prices(prices, [_default()])
    cost = prices.cost(_default())
    assert (cost.total, cost.currency) == (EUR_TOTAL, "EUR")
    assert cost.words().endswith(f"= {EUR_TOTAL:,} EUR")


def test_a_file_in_the_built_in_currency_may_price_only_some_parts(tmp_path: Path) -> None:
    prices = load_prices(_write(tmp_path, 'currency = "usd"\n[host]\nprice = 1\n'))
    builtin = load_prices()
    check_prices(prices, [_default()])
    assert prices.cost(_default()).total == builtin.cost(_default()).total - 4 * (
        builtin.data["host"]["price"] - 1
    )


def test_an_empty_currency_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SizeError, match="currency: write the currency as a word"):
        load_prices(_write(tmp_path, 'currency = " "\n'))


def test_the_json_answer_names_the_currency_of_its_costs(tmp_path: Path) -> None:
    own = tmp_path / "eur.toml"
    own.write_text(EUR_ALL, "utf-8")
    code, out, _ = call([*SIZE, "--costs", str(own)])
    assert code in (0, 1)
    answer = json.loads(out)
    priced = [*answer["candidates"], *answer["frontier"]]
    if answer["best"] is not None:
        priced.append(answer["best"])
    assert answer["candidates"] and answer["frontier"]
    for entry in priced:
        assert (entry["cost"], entry["currency"]) == (EUR_TOTAL, "EUR"), entry
    code, out, _ = call(SIZE)  # the built-in table: USD
    assert {c["currency"] for c in json.loads(out)["candidates"]} == {"USD"}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(text, "utf-8")
    return path
