"""``simcache size`` with a profile the built-in price table leaves out (review 66c F1): the error
is headed by the table it looked in, and docs/sizing.md lists what the built-in table prices."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path

from support.cli import call
from support.paths import ROOT

CURRENT = ["--vary", "cluster.tier = ['nvme-pm9a3', 'sata-ssd-d3-s4610']"]
TARGET = ["--target", "write p99 <= 5ms"]


def test_a_missing_price_without_costs_is_headed_by_the_built_in_table() -> None:
    code, out, err = call(["size", "default", *TARGET, *CURRENT])
    assert code == 2 and out == ""
    first = err.splitlines()[0]
    assert first.startswith(
        "error: the built-in price table (simcache/spec/profiles/costs.toml): cannot size it"
    ), first
    assert "--costs:" not in first
    assert "[tiers.nvme-pm9a3]" in err  # the stub to fill is still printed


def test_a_missing_price_with_costs_is_headed_by_costs(tmp_path: Path) -> None:
    own = tmp_path / "prices.toml"
    own.write_text("[links.10GbE]\nport = 1\n", "utf-8")
    code, _, err = call(["size", "default", *TARGET, *CURRENT, "--costs", str(own)])
    assert code == 2
    assert err.splitlines()[0].startswith("error: --costs: cannot size it"), err


def test_sizing_doc_lists_the_profiles_the_built_in_table_prices() -> None:
    text = resources.files("simcache.spec.profiles").joinpath("costs.toml").read_text("utf-8")
    table = tomllib.loads(text)
    doc = (ROOT / "docs" / "sizing.md").read_text("utf-8")
    listed = doc.split("The built-in table prices only the 2014-era profiles:", 1)[1]
    listed = listed.split("Any other profile", 1)[0]
    for section in ("tiers", "links", "arrays"):
        line = re.search(rf"^- {section}: (.*?)(?=^- |\Z)", listed, re.M | re.S)
        assert line is not None, section
        names = re.findall(r"`([^`]+)`", line.group(1))
        assert names == list(table[section]), (section, names)
