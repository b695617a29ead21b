"""What a configuration costs: a price table (built in, or your own TOML over it) and the cost of a
scenario, by part.

The built-in table is ``simcache/spec/profiles/costs.toml``, each price with its source or
"assumption" beside it. A configuration costs

- ``hosts x host.price`` (the servers, without cache device or ports);
- ``hosts x`` the cache device: its tier profile's ``price`` for the profile's ``capacity``, in
  proportion to bytes for another ``cluster.tier.capacity``;
- ``hosts x (peer_links x port(peer_link) + port(storage_link))``: a port's ``port`` price of its
  link profile;
- the array: its profile's ``price``, plus or minus ``spindle`` per drive for another
  ``array.spindles``.

The destage buffer and the read cache live on the tier: they have no price of their own. A part
whose profile has no price (a profile of your own, or one the table leaves out) is a
:class:`SizeError` naming it and the table's line to add; :func:`check_prices` finds it before
anything runs.

Amounts of two currencies are never added (review 66): a ``--costs`` file whose ``currency`` is not
the built-in table's must price every part the search uses itself. A price it would take from the
built-in table instead is a :class:`CurrencyError` naming the file, both currencies and each such
part, before anything runs (:func:`check_prices`), and :meth:`PriceTable.cost` refuses it too.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from simcache.base.errors import ScenarioError, counted
from simcache.base.units import UnitError, format_size, parse_size
from simcache.results.part_words import drive_noun
from simcache.spec import Scenario
from simcache.spec.load import parse_toml, read_scenario_text

__all__ = [
    "BUILTIN_TABLE",
    "Cost",
    "CostPart",
    "CurrencyError",
    "PriceTable",
    "SizeError",
    "check_prices",
    "load_prices",
]

BUILTIN_TABLE = "the built-in price table (simcache/spec/profiles/costs.toml)"
"""How errors name the built-in table when no ``--costs`` file was given."""

_SECTIONS = {
    "host": ("price",),
    "tiers": ("price", "capacity"),
    "links": ("port",),
    "arrays": ("price", "spindle"),
}


_MONEY = ("price", "port", "spindle")
"""The keys that are amounts of the table's currency (a tier's ``capacity`` is bytes)."""

_STUB = {
    "price": "price = 0  # the part's price",
    "port": "port = 0  # one port: NIC and switch port",
    "spindle": "spindle = 0  # one drive more or less than the profile's",
}
"""A missing price's line in the stub :func:`check_prices` offers, by key."""


def _decimal_size(nbytes: float) -> str:
    """A size in decimal units, as drives are sold and their profiles rate them: ``3.84e12`` ->
    ``"3.84TB"``, ``8e11`` -> ``"800GB"``."""
    amount = f"{nbytes:.0f}B"
    for unit, size in (("MB", 1e6), ("GB", 1e9), ("TB", 1e12), ("PB", 1e15)):
        if nbytes >= size:
            amount = f"{nbytes / size:.4g}{unit}"
    return amount


def _capacity_words(capacity: float, priced: Any) -> str:
    """A tier's ``capacity`` (bytes) in the units its price's ``capacity`` is written in: decimal
    (``"3.84TB"``) where that is (``"3.84TB"``, as the built-in table and the drives' profiles
    write them), binary (``"1GiB"``) otherwise (review 67a F12: a cost part said ``nvme-pm9a3
    3.49TiB`` of the price file's and the profile's 3.84 TB drive)."""
    if isinstance(priced, str) and re.search(r"[kmgt]b$", priced.strip(), re.IGNORECASE):
        return _decimal_size(capacity)
    return format_size(capacity)


def _capacity_stub(capacity: float) -> str:
    """The stub's capacity line for a tier of ``capacity`` bytes, in decimal units as drives are
    sold (``"6.4TB"``): a price is then per drive of that size (review 65: every tier's stub said
    1.6 TB, and a 6.4 TB drive's price read as per 1.6 TB priced the tier four times over)."""
    return (
        f'capacity = "{_decimal_size(capacity)}"  # the capacity that price buys: the tier\'s own '
        "(a tier is priced per byte)"
    )


class SizeError(ScenarioError):
    """Bad input to ``simcache size`` (a dimension, a target, a price): one line naming the
    option, what is wrong and the fix (several, a line each: the prices missing).

    ``fix`` (``(where, text)``), when given, is what completes the input for all the problems at
    once (the tables of a price file to paste): printed on a line after them, and not counted
    among them (review 67a F12: five missing prices were "6 problem(s)")."""

    HEADING = "cannot size it"

    def __init__(
        self, source: str, problems: list[tuple[str, str]], fix: tuple[str, str] | None = None
    ):
        super().__init__(source, problems)
        self.fix = fix
        if len(self.problems) > 1 or fix is not None:  # a line each, as a scenario's problems
            self.args = (self.text(source, self.problems, [fix] if fix is not None else []),)
            return
        where, message = self.problems[0]
        self.args = (
            f"{source}: {where}: {message}"
            if where and where != source
            else f"{source}: {message}",
        )

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.source, self.problems, self.fix))


class CurrencyError(SizeError):
    """A ``--costs`` file in another currency than the built-in table's leaves parts of the search
    to the built-in prices: ``source`` is the file, a problem per part (its table and key in the
    file: what to add), and after them, not counted (``fix``), the tables to paste in the file's
    currency. Adding the two currencies' amounts would give a total in neither."""

    HEADING = "cannot size it: its prices would mix two currencies"


@dataclass(frozen=True)
class CostPart:
    """One line of a bill: ``count`` of ``item`` at ``unit_price`` each."""

    item: str
    count: float
    unit_price: float

    @property
    def total(self) -> float:
        return self.count * self.unit_price

    def to_json(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "count": self.count,
            "unit_price": self.unit_price,
            "total": self.total,
        }


@dataclass(frozen=True)
class Cost:
    """A configuration's cost and what it is made of."""

    parts: tuple[CostPart, ...]
    currency: str

    @property
    def total(self) -> float:
        return sum(part.total for part in self.parts)

    def words(self) -> str:
        """``"4 x host at 8,000 + 4 x sata-ssd-s3700 800GB at 1,900 + ... = 49,240 USD"``."""
        items = " + ".join(
            f"{part.count:g} x {part.item} at {part.unit_price:,.0f}"
            for part in self.parts
            if part.count
        )
        return f"{items} = {self.total:,.0f} {self.currency}"


@dataclass(frozen=True)
class PriceTable:
    """Prices by kind: ``host``, ``tiers`` (by profile: price and capacity), ``links`` (by
    profile: port) and ``arrays`` (by profile: price and spindle), in ``currency``."""

    data: Mapping[str, Any]
    source: str
    given: str | None = None
    """The ``--costs`` file laid over the built-in table, if any."""
    own: frozenset[str] = frozenset()
    """The keys the ``--costs`` file gives itself, dotted (``"host.price"``,
    ``"tiers.nvme-p3700.capacity"``): the others are the built-in table's."""
    builtin_currency: str = ""
    """The built-in table's currency (``"USD"``); its prices are in no other."""

    @property
    def foreign(self) -> bool:
        """Whether the table's currency is not the built-in table's: then a price the
        ``--costs`` file does not give itself cannot be used (it is in the other currency)."""
        return self.given is not None and _same(self.currency) != _same(self.builtin_currency)

    def borrowed(self, section: str, profile: str | None, key: str) -> bool:
        """Whether ``key`` of ``section`` (``profile``'s entry) is a built-in price in another
        currency than the table's (:attr:`foreign`), which sizing refuses to use."""
        table = section if profile is None else f"{section}.{profile}"
        return self.foreign and key in _MONEY and f"{table}.{key}" not in self.own

    @property
    def heading(self) -> str:
        """What a missing price's error is headed by: ``--costs`` when a price file was given,
        else the built-in table itself (review 66c F1: it said ``--costs`` with none given)."""
        return "--costs" if self.given is not None else BUILTIN_TABLE

    @property
    def currency(self) -> str:
        return str(self.data.get("currency", ""))

    def cost(self, scenario: Scenario) -> Cost:
        """The cost of ``scenario``'s cluster and array by :mod:`this module
        <simcache.runs.sizing.costs>`'s rules; a :class:`CurrencyError` (or :class:`SizeError`)
        rather than a total of prices in two currencies."""
        if self.foreign:
            check_prices(self, [scenario])
        cluster = scenario.cluster
        hosts = cluster.hosts
        tier = cluster.tier
        tier_price = self._entry("tiers", tier.profile, "cluster.tier")
        priced = float(parse_size(tier_price["capacity"]))
        per_device = float(tier_price["price"]) * tier.capacity / priced
        parts = [
            CostPart("host", hosts, float(self._entry("host", None, "cluster.hosts")["price"])),
            CostPart(
                f"{tier.profile} {_capacity_words(tier.capacity, tier_price['capacity'])}",
                hosts,
                per_device,
            ),
            CostPart(
                f"{cluster.peer_link.profile} peer port",
                hosts * cluster.peer_links,
                self._port(cluster.peer_link.profile, "cluster.peer_link"),
            ),
            CostPart(
                f"{cluster.storage_link.profile} storage port",
                hosts,
                self._port(cluster.storage_link.profile, "cluster.storage_link"),
            ),
        ]
        array = scenario.array
        entry = self._entry("arrays", array.profile, "array")
        parts.append(CostPart(f"array {array.profile}", 1, float(entry["price"])))
        profiled = _profile_spindles(array.profile)
        if array.spindles != profiled:  # (an all-flash array's are flash drives)
            parts.append(
                CostPart(
                    f"{array.profile} {drive_noun(array.drive)}",
                    array.spindles - profiled,
                    float(entry["spindle"]),
                )
            )
        return Cost(tuple(parts), self.currency)

    def _port(self, profile: str | None, where: str) -> float:
        return float(self._entry("links", profile, where)["port"])

    def _entry(self, section: str, profile: str | None, where: str) -> Mapping[str, Any]:
        if section == "host":
            return self.data["host"]  # type: ignore[no-any-return]
        if profile is None:
            raise SizeError(
                self.heading,
                [
                    (
                        where,
                        "names no built-in profile, so it has no price: "
                        f"give it a profile, or price it in a --costs file ([{section}.NAME])",
                    )
                ],
            )
        table = self.data.get(section, {})
        if profile not in table:
            keys = " and ".join(f"{key} = ..." for key in _SECTIONS[section])
            raise SizeError(
                self.heading,
                [
                    (
                        where,
                        f"no price for {section[:-1]} profile {profile!r} in {self.source}: "
                        f"add [{section}.{profile}] with {keys} in a --costs file",
                    )
                ],
            )
        return table[profile]  # type: ignore[no-any-return]


def _profile_spindles(profile: str | None) -> int:
    from simcache.spec.profiles import get_profile

    return int(get_profile("array", profile)["spindles"]) if profile is not None else 0


def _builtin() -> dict[str, Any]:
    text = resources.files("simcache.spec.profiles").joinpath("costs.toml").read_text("utf-8")
    return tomllib.loads(text)


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The built-in price table, with the tables and keys of the TOML file at ``path`` (if any)
    over it, checked."""
    data = _builtin()
    builtin_currency = str(data.get("currency", ""))
    source = "the built-in price table"
    own: set[str] = set()
    if path is not None:
        given = parse_toml(read_scenario_text(Path(path)), str(path))
        source = f"{path} over the built-in price table"
        unknown = sorted(set(given) - {"currency", *_SECTIONS})
        if unknown:
            raise SizeError(
                str(path),
                [
                    (
                        unknown[0],
                        "unknown table; a price file has currency, [host], [tiers.NAME], "
                        "[links.NAME], [arrays.NAME]",
                    )
                ],
            )
        for key, value in given.items():
            if key in ("currency", "host"):
                data[key] = value if key == "currency" else {**data.get("host", {}), **value}
                if key == "host":
                    own.update(f"host.{field}" for field in value)
            else:
                for name, fields in value.items():
                    data.setdefault(key, {})[name] = {**data.get(key, {}).get(name, {}), **fields}
                    own.update(f"{key}.{name}.{field}" for field in fields)
    _check(data, str(path) if path is not None else "costs.toml")
    return PriceTable(
        data,
        source,
        str(path) if path is not None else None,
        frozenset(own),
        builtin_currency,
    )


def _same(currency: str) -> str:
    """A currency as compared: ``"usd"`` is ``"USD"``."""
    return currency.strip().upper()


def _check(data: Mapping[str, Any], source: str) -> None:
    """Every price a non-negative number, every tier capacity a size, every entry complete."""
    currency = data.get("currency", "")
    if not isinstance(currency, str) or not currency.strip():
        raise SizeError(
            source, [("currency", 'write the currency as a word, e.g. currency = "USD"')]
        )
    host = data.get("host")
    entries: list[tuple[str, str, Any]] = [("host", "", host)]
    for section in ("tiers", "links", "arrays"):
        table = data.get(section, {})
        if not isinstance(table, dict):
            raise SizeError(
                source, [(section, f"must be a table of profiles, e.g. [{section}.NAME]")]
            )
        entries += [(section, name, fields) for name, fields in table.items()]
    for section, name, fields in entries:
        where = section if not name else f"{section}.{name}"
        if not isinstance(fields, dict):
            raise SizeError(
                source, [(where, f"must be a table with {', '.join(_SECTIONS[section])}")]
            )
        for key in _SECTIONS[section]:
            if key not in fields:
                raise SizeError(source, [(where, f"has no {key}; add {key} = ...")])
            value = fields[key]
            if key == "capacity":
                try:
                    if parse_size(value) <= 0:
                        raise UnitError("not positive")
                except (UnitError, TypeError, ValueError):
                    raise SizeError(
                        source,
                        [
                            (
                                f"{where}.capacity",
                                f'give the capacity priced as a size, e.g. "800GB" (got {value!r})',
                            )
                        ],
                    ) from None
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise SizeError(
                    source, [(f"{where}.{key}", f"must be a price, a number >= 0 (got {value!r})")]
                )


def check_prices(prices: PriceTable, scenarios: Iterable[Scenario]) -> None:
    """Raise one :class:`SizeError` naming every part of ``scenarios`` the table has no price for
    (each once, with a TOML stub to paste into a --costs file), so that a price file is written in
    one go, not one missing price a try; then, for a ``--costs`` file in another currency than the
    built-in table's, one :class:`CurrencyError` naming every part it would price with a built-in
    price (each once, with the tables to paste into the file)."""
    problems: list[tuple[str, str]] = []
    stubs: dict[str, str] = {}
    borrowed: dict[str, tuple[str, str | None, str, list[str], Scenario]] = {}
    for scenario in scenarios:
        cluster = scenario.cluster
        parts = [
            ("host", None, "cluster.hosts"),
            ("tiers", cluster.tier.profile, "cluster.tier"),
            ("links", cluster.peer_link.profile, "cluster.peer_link"),
            ("links", cluster.storage_link.profile, "cluster.storage_link"),
            ("arrays", scenario.array.profile, "array"),
        ]
        for section, profile, where in parts:
            try:
                prices._entry(section, profile, where)
            except SizeError as error:
                key = f"[{section}.{profile}]"
                if key not in stubs and (where, error.problems[0][1]) not in problems:
                    problems.append(error.problems[0])
                    if profile is not None:
                        # a tier's capacity: what a drive of the scenario's tier holds
                        lines = [
                            _capacity_stub(cluster.tier.capacity)
                            if name == "capacity"
                            else _STUB[name]
                            for name in _SECTIONS[section]
                        ]
                        stubs[key] = "\n".join([key, *lines])
                continue
            used = [name for name in _SECTIONS[section] if name in _MONEY]
            if section == "arrays" and scenario.array.spindles == _profile_spindles(profile):
                used.remove("spindle")  # the profile's own drives: no spindle price in its cost
            for name in used:
                if prices.borrowed(section, profile, name):
                    table = section if profile is None else f"{section}.{profile}"
                    seen = borrowed.setdefault(table, (section, profile, where, [], scenario))
                    if name not in seen[3]:
                        seen[3].append(name)
    if problems:
        fix = None
        if stubs:
            stub = "\n\n".join(stubs.values())
            fix = (
                "--costs",
                f"{counted(len(stubs), 'price')} missing; a --costs file with these tables "
                f"completes it (replace each 0 by your price in "
                f"{prices.currency or 'your currency'}, and a tier's capacity by the one that "
                f"price buys):\n{stub}",
            )
        raise SizeError(prices.heading, problems, fix)
    if borrowed:
        raise _currency_error(prices, borrowed)


def _currency_error(
    prices: PriceTable, borrowed: Mapping[str, tuple[str, str | None, str, list[str], Scenario]]
) -> CurrencyError:
    """The error for the parts of a foreign-currency ``--costs`` file that would take a built-in
    price: a line per part, then the tables to paste (those the file does not have yet; a table
    it has is completed by the keys its line names)."""
    mine, theirs = prices.currency, prices.builtin_currency
    problems: list[tuple[str, str]] = []
    stubs: list[str] = []
    for table, (section, profile, where, names, scenario) in borrowed.items():
        entry = prices._entry(section, profile, where)
        keys = " and ".join(f"{name} = ..." for name in names)
        builtin = ", ".join(f"{name} = {float(entry[name]):,.0f} {theirs}" for name in names)
        part = where if profile is None else f"{where} {profile!r}"
        has_table = any(key.startswith(f"{table}.") for key in prices.own)
        add = f"add {keys} to its [{table}]" if has_table else f"add [{table}] with {keys}"
        problems.append(
            (
                table,
                f"{part} has no {mine} price in {prices.given}, and the built-in one ({builtin}) "
                f"is in {theirs}, never added to {mine}: {add} there, or set its "
                f'currency = "{theirs}"',
            )
        )
        if not has_table:
            lines = [_STUB[name] for name in names]
            if section == "tiers":
                lines.append(_capacity_stub(scenario.cluster.tier.capacity))
            stubs.append("\n".join([f"[{table}]", *lines]))
    fix = (
        f"{counted(len(problems), 'part')} with no {mine} price; price them in {prices.given}, "
        f'or set its currency = "{theirs}" to take the built-in prices'
    )
    if stubs:
        fix += (
            f"; these tables complete it (replace each 0 by your price in {mine}, and a tier's "
            "capacity by the one that price buys):\n" + "\n\n".join(stubs)
        )
    return CurrencyError(prices.given or BUILTIN_TABLE, problems, ("--costs", fix))
