"""The sidebar after review 64: flash arrays (F1), the storage link and array profile selectors and
the summary's words for changed profile fields (F5), out-of-range numbers (F11), a size given
twice (F12) and the checks of a downloaded scenario (F15).

Pages are driven headless with Streamlit's AppTest, runs kept to :data:`SECONDS` simulated
seconds, and every figure a page shows is compared with the same run made through the public API.
"""

from __future__ import annotations

import hashlib
import tomllib

import pytest
from streamlit.testing.v1 import AppTest
from support.paths import ROOT

import simcache
from simcache.physics.cluster import framed_bytes
from simcache.spec import LinkSpec
from simcache.spec.dump import scenario_toml
from simcache_app.controls import out_of_range, parse_size_mix
from simcache_app.describe import format_ms, headline, headline_lower_bounds, scenario_summary
from simcache_app.parameters import sweep_parameters
from simcache_app.scenario_files import exported_scenario, read_upload

APP = ROOT / "app.py"
SECONDS = 2.0
"""Simulated seconds of every run in these tests."""
AFA = {"array": "afa-24x-nvme"}
"""The all-flash array profile of the review's 2026 cluster."""


@pytest.fixture(scope="module")
def default() -> simcache.Scenario:
    return simcache.load_scenario("default")


def page(upload: tuple[str, bytes] | None = None) -> tuple[AppTest, str]:
    """The page (with ``upload`` as the uploaded scenario file), its runs cut to
    :data:`SECONDS`; and the key its sidebar widgets start with."""
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    source = "default"
    if upload is not None:
        name, data = upload
        at.sidebar.file_uploader(key="upload").set_value((name, data, "application/toml")).run()
        source = f"upload-{hashlib.sha256(data).hexdigest()[:12]}"
    assert not at.exception
    at.sidebar.number_input(key=f"{source}.run.duration").set_value(SECONDS).run()
    return at, source


def run_figures(at: AppTest) -> dict[str, str]:
    """Press Run simulation; the headline metrics the page shows."""
    at.button(key="Run simulation").click().run()
    assert not at.exception and not at.error
    return {metric.label: metric.value for metric in at.metric}


def api_figures(scenario: simcache.Scenario) -> dict[str, str]:
    """The headline metrics of the same run through the public API, as the page words them."""
    result = simcache.simulate(scenario, seed=1, duration=SECONDS)
    bounds = headline_lower_bounds(result)
    return {
        f"VM {label}": ("≥ " if label in bounds else "") + format_ms(value)
        for label, value in headline(result).items()
    }


def summary(at: AppTest) -> str:
    return next(c.value for c in at.sidebar.caption if c.value.startswith("As set: "))


def widget_keys(at: AppTest, prefix: str) -> list[str]:
    keys = [widget.key for kind in ("number_input", "selectbox") for widget in at.sidebar.get(kind)]
    return [key for key in keys if key is not None and key.startswith(prefix)]


# -- F1: a flash array in the sidebar
# ---------------------------------------------------------------------------------------


def test_a_flash_drive_chosen_for_the_array_has_no_rpm_input_and_runs(
    default: simcache.Scenario,
) -> None:
    at, _ = page()
    at.sidebar.selectbox(key="default.array.drive").select("nvme-pm9a3").run()
    assert not at.exception and not at.error
    assert not widget_keys(at, "default.array.drive.rpm")  # a flash drive has no RPM
    assert "14 x nvme-pm9a3 flash drives (raid10)" in summary(at)
    assert run_figures(at) == api_figures(default.with_overrides({"array.drive": "nvme-pm9a3"}))
    # back to a spinning drive: its RPM again, from that drive's profile
    at.sidebar.selectbox(key="default.array.drive").select("sas-15k").run()
    assert at.sidebar.number_input(key="default.array.drive.rpm@sas-15k").value == 15000


def test_an_uploaded_all_flash_scenario_is_shown_editable_and_runs(
    default: simcache.Scenario,
) -> None:
    mine = default.with_overrides(
        {
            "name": "cluster2026",
            **AFA,
            "cluster.storage_link": "25GbE",
            "cluster.peer_link": {"profile": "roce-100GbE", "bandwidth": "25Gbit/s"},
        }
    )
    at, source = page(("cluster2026.toml", scenario_toml(mine).encode()))
    assert not at.error
    assert at.sidebar.selectbox(key=f"{source}.array").value == "afa-24x-nvme"
    assert at.sidebar.selectbox(key=f"{source}.array.drive").value == "nvme-pm9a3"
    assert at.sidebar.number_input(key=f"{source}.array.spindles").value == 24
    assert not widget_keys(at, f"{source}.array.drive.rpm")
    shown = summary(at)
    assert "1 x roce-100GbE at 25 Gbit/s peer link per host" in shown
    assert "25GbE storage link per host, to the array's nvmeof-rdma-100GbE port" in shown
    assert "afa-24x-nvme array of 24 x nvme-pm9a3 flash drives (raid6)" in shown
    # the selector shows the link as the file sets it, and warns that another profile replaces it
    link = at.sidebar.selectbox(key=f"{source}.cluster.peer_link")
    assert link.value == "roce-100GbE"
    assert "roce-100GbE at 25 Gbit/s, as in the file" in link.options
    assert "25GbE" in link.options and "roce-100GbE" not in link.options
    assert "choosing another profile replaces the whole part" in (link.help or "")
    assert run_figures(at) == api_figures(mine)
    # editable: fewer drives in the same array
    at.sidebar.number_input(key=f"{source}.array.spindles").set_value(12).run()
    assert run_figures(at) == api_figures(mine.with_overrides({"array.spindles": 12}))


# -- F5: the storage link, the array profile and the summary's words
# ---------------------------------------------------------------------------------------


def test_storage_link_and_array_profile_are_chosen_in_the_sidebar(
    default: simcache.Scenario,
) -> None:
    at, _ = page()
    at.sidebar.selectbox(key="default.cluster.storage_link").select("25GbE").run()
    at.sidebar.selectbox(key="default.array").select("afa-24x-nvme").run()
    assert not at.exception and not at.error
    assert any(
        c.value == "2 settings changed from the file: cluster.storage_link, array"
        for c in at.sidebar.caption
    )
    # the array's own fields start again from the chosen profile, in widgets of their own
    assert at.sidebar.number_input(key="default.array.spindles@afa-24x-nvme").value == 24
    assert at.sidebar.selectbox(key="default.array.drive@afa-24x-nvme").value == "nvme-pm9a3"
    assert "25GbE storage link per host" in summary(at)
    chosen = default.with_overrides({"cluster.storage_link": "25GbE", **AFA})
    assert run_figures(at) == api_figures(chosen)
    # a spinning drive in that array, then another: each starts from its own profile's RPM
    at.sidebar.selectbox(key="default.array.drive@afa-24x-nvme").select("sas-15k").run()
    rpm = "default.array.drive.rpm@afa-24x-nvme@sas-15k"
    at.sidebar.number_input(key=rpm).set_value(12000).run()
    at.sidebar.selectbox(key="default.array.drive@afa-24x-nvme").select("sata-7200").run()
    assert at.sidebar.number_input(key="default.array.drive.rpm@afa-24x-nvme@sata-7200").value == (
        7200
    )


def test_the_sweep_view_offers_the_storage_link_and_the_array_profiles(
    default: simcache.Scenario,
) -> None:
    offered = {p.path: p.default_values for p in sweep_parameters(default)}
    assert offered["cluster.storage_link"] == "1GbE, 10GbE, 25GbE"
    assert "afa-24x-nvme" in offered["array"].split(", ")


def test_the_sweep_view_offers_no_rpm_for_a_flash_array(default: simcache.Scenario) -> None:
    # as the sidebar has no RPM box for a flash drive, the sweep offers no RPM values to refuse
    assert "array.drive.rpm" in {p.path for p in sweep_parameters(default)}
    flash = default.with_overrides({"array": "afa-24x-nvme"})
    assert "array.drive.rpm" not in {p.path for p in sweep_parameters(flash)}


def test_the_summary_says_which_profile_fields_are_set_otherwise(
    default: simcache.Scenario,
) -> None:
    edited = default.with_overrides(
        {
            "cluster.peer_link": {"profile": "roce-100GbE", "bandwidth": "25Gbit/s"},
            "cluster.storage_link": {"profile": "10GbE", "latency": "5us", "mtu": 9000},
            "cluster.tier.write_latency": "1ms",
            "array.controller_cache": "1GiB",
            "array.drive.rpm": 5400,
        }
    )
    assert scenario_summary(edited).split("; ")[1:] == [
        "sata-ssd-s3700-field (write_latency changed) flash tier, 372.5 GiB per host",
        "destager buffer 2 GiB per host",
        "1 x roce-100GbE at 25 Gbit/s peer link per host",
        "10GbE (latency, mtu changed) storage link per host, to the array's 1GbE port",
        "array-14x7200 array of 14 x 5,400 RPM spindles (raid10",
        "controller_cache changed)",
    ]
    # a link named by no profile: its line rate
    bare = default.with_overrides({"cluster.peer_link": {"bandwidth": "2Gbit/s", "latency": "1us"}})
    assert "1 x 2 Gbit/s peer link per host" in scenario_summary(bare)


def test_roce_25gbe_is_roce_100gbe_at_a_quarter_of_the_line_rate() -> None:
    """IEEE 802.3by: 25 Gbit/s; RoCEv2 framing (Annex A17): 4,096 B of payload in 4,096 + 82 B on
    the wire; the per-message latency is roce-100GbE's (the profile says why)."""
    slow, fast = LinkSpec.model_validate("roce-25GbE"), LinkSpec.model_validate("roce-100GbE")
    assert slow.bandwidth == pytest.approx(25e9 / 8, rel=1e-12)
    assert (slow.latency, slow.mtu, slow.header_bytes, slow.framing_bytes) == (
        fast.latency,
        fast.mtu,
        fast.header_bytes,
        fast.framing_bytes,
    )
    wire, packets = framed_bytes(slow, 1024 * 4096)
    assert packets == 1024 and 1024 * 4096 / wire == pytest.approx(4096 / 4178, rel=1e-12)


# -- F11: a number out of range
# ---------------------------------------------------------------------------------------


def sidebar_errors(at: AppTest) -> list[str]:
    return [e.value for e in at.sidebar.error]


def test_a_number_out_of_range_is_said_under_its_box_until_it_is_fixed() -> None:
    at, _ = page()
    at.sidebar.number_input(key="default.cluster.hosts").set_value(100000).run()
    assert not at.exception
    said = (
        "**Hosts**: 100,000 is outside the allowed range, 1 to 256. The page runs with 4, the "
        "value it started from, until the box holds a number in the range."
    )
    assert sidebar_errors(at) == [said]
    assert summary(at).startswith("As set: 4 hosts")  # what the error says the page runs with
    at.sidebar.selectbox(key="default.cluster.peer_link").select("10GbE").run()
    assert sidebar_errors(at) == [said]  # still there after another setting
    at.sidebar.number_input(key="default.cluster.hosts").set_value(6).run()
    assert not sidebar_errors(at) and summary(at).startswith("As set: 6 hosts")


def test_a_duration_or_a_quantity_out_of_range_is_said_with_its_unit_and_range() -> None:
    at, _ = page()
    at.sidebar.number_input(key="default.run.duration").set_value(0).run()
    at.sidebar.number_input(key="default.cluster.destager.capacity").set_value(0).run()
    assert [e.split(". ")[0] for e in sidebar_errors(at)] == [
        "**Simulated seconds**: 0 is outside the allowed range, 1 to 600",  # the page's own
        "**Destager buffer per host (MiB)**: 0 is outside the allowed range, 0.001 to "
        "8,589,934,592",
    ]
    assert at.button(key="Run simulation")  # the page runs with the values it started from


@pytest.mark.parametrize(
    ("name", "group", "gib"),
    [("compile_workload", "reads", 0.0002441), ("host_failure_ha", "moved", 0.0009766)],
)
def test_a_files_own_value_past_a_rounded_bound_is_shown_without_error(
    name: str, group: str, gib: float
) -> None:
    """A 256 KiB (1 MiB) working set is 0.000244 GiB (0.000977 GiB), under the GiB box's 0.001
    (the schema's ``gt=0`` stepped by the box's resolution): the page shows the file's value and
    runs it unchanged (a widget given that floor refused to be drawn, and the page stopped)."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["scenario"] = name
    at.run()
    assert not at.exception and not at.error
    box = at.sidebar.number_input(key=f"{name}.groups.{group}.workload.working_set")
    assert box.value == gib
    assert any(c.value == "0 settings changed from the file" for c in at.sidebar.caption)


def test_out_of_range_words() -> None:
    assert out_of_range(3, 1, 256) is None and out_of_range(1, 1, None) is None
    assert out_of_range(0.5, 1, None) == "below the allowed range: give at least 1"
    assert out_of_range(1e9, None, 600) == "above the allowed range: give at most 600"


# -- F12: a size given twice
# ---------------------------------------------------------------------------------------


def test_a_size_given_twice_is_refused_with_the_fix() -> None:
    with pytest.raises(simcache.ScenarioError) as error:
        parse_size_mix("8KiB: 0.7, 64KiB: 0.1, 8KiB: 0.3", "groups.db.workload.sizes")
    assert error.value.problems == [
        (
            "groups.db.workload.sizes",
            "8KiB is given twice; give each size once, with its weights added (e.g. 8KiB: 1)",
        )
    ]


def test_the_page_says_which_mix_gives_a_size_twice() -> None:
    at, _ = page()
    at.sidebar.text_input(key="default.groups.db.workload.sizes").input("8KiB: 0.7, 8KiB: 0.3")
    at.run()
    assert not at.exception
    assert "groups.db.workload.sizes: 8KiB is given twice" in at.error[0].value


def test_a_mix_the_page_cannot_read_keeps_the_rest_of_the_sidebar() -> None:
    # the error under db's box, db's mix as it was, and the later groups' boxes and the tabs still
    # there (an error raised from the box stopped the sidebar, and Streamlit forgot the rest)
    at, _ = page()
    at.sidebar.text_input(key="default.groups.db.workload.sizes").input("8KiB: lots").run()
    assert not at.exception
    assert any("groups.db.workload.sizes: weight 'lots'" in e.value for e in at.error)
    assert at.sidebar.text_input(key="default.groups.web.workload.sizes").value
    assert at.tabs and not any(
        "changed from the file" in c.value and "sizes" in c.value for c in at.sidebar.caption
    )


def test_a_scenario_file_with_a_size_twice_is_refused() -> None:
    text = (ROOT / "scenarios" / "default.toml").read_text()
    twice = text.replace('"8KiB" = 0.7', '"8KiB" = 0.7, "8KiB" = 0.3', 1)
    other_spelling = text.replace('"8KiB" = 0.7', '"8KiB" = 0.7, "8192B" = 0.3', 1)
    assert twice != text and other_spelling != text
    with pytest.raises(simcache.ScenarioError, match="Duplicate inline table key '8KiB'"):
        read_upload("twice.toml", twice.encode())  # TOML itself has no key twice
    with pytest.raises(simcache.ScenarioError, match="are the same size"):
        read_upload("spelt.toml", other_spelling.encode())


# -- F15: a downloaded scenario's checks
# ---------------------------------------------------------------------------------------


def test_checks_written_for_the_file_are_marked_once_the_settings_change(
    default: simcache.Scenario,
) -> None:
    changed = {"groups.web.policy": "WB+1", "cluster.hosts": 6}
    _, text = exported_scenario(default.with_overrides(changed), changed, 14.0, 1)
    assert text.splitlines()[:2] == [
        "# Exported from the what-if page.",
        "# Its checks ([[expect]] and [check]) were written for the file's settings; the page "
        "changed groups.web.policy, cluster.hosts, so their bounds and words (observation, "
        "tolerance) may not describe this scenario.",
    ]
    back = simcache.load_scenario(tomllib.loads(text))
    assert back.expect == default.expect  # still targets `simcache check` can judge
    _, unchanged = exported_scenario(default, {}, 14.0, 1)
    assert not unchanged.startswith("# Exported")


def test_checks_a_shorter_run_cuts_are_left_out_and_the_file_loads() -> None:
    vmotion = simcache.load_scenario("vmotion")  # checks up to 20 s
    _, text = exported_scenario(vmotion, {}, 8.0, 1)
    head = text.splitlines()[1]
    assert head.startswith(
        "# The file's checks ([[expect]] and [check]) are left out: they do not fit the page's "
        "shorter run (8 s of the file's 20 s), and the file would not load with them (expect."
    )
    back = simcache.load_scenario(tomllib.loads(text))
    assert not back.expect and back.variants == vmotion.variants


def test_variants_that_no_longer_apply_are_left_out(default: simcache.Scenario) -> None:
    # a variant asking for two peer copies, on a cluster cut to two hosts
    base = default.with_overrides({"groups.db.policy": "WB+1"}).model_copy(
        update={"variants": {"db-wb2": {"groups.db.policy": "WB+2"}}, "expect": []}
    )
    changed = {"cluster.hosts": 2}
    _, text = exported_scenario(base.with_overrides(changed), changed, 14.0, 1)
    assert "# Variants left out, as they no longer apply: db-wb2." in text.splitlines()
    assert simcache.load_scenario(tomllib.loads(text)).variants == {}


def test_a_changed_scenario_says_so_in_its_description(default: simcache.Scenario) -> None:
    """Review 65e: the page's downloaded report kept the file's description ("SATA flash, 1GbE, 14
    x 7.2K array") above a run on NVMe, 10GbE and an all-flash array: the sidebar's changes are
    said after it, in the scenario the page runs (the report's and the exported file's
    description)."""
    from simcache_app.scenario_files import changed_description

    changed = {"cluster.hosts": 6, "cluster.peer_link": "10GbE", **AFA}
    said = changed_description(default.description, changed)
    assert said.startswith(default.description + " (changed in the what-if page: ")
    assert said.endswith("cluster.hosts = 6; cluster.peer_link = 10GbE; array = afa-24x-nvme)")
    # said once: the exported file of a scenario that says it already does not say it again
    assert changed_description(said, changed) == said
    at, _ = page()
    at.sidebar.selectbox(key="default.array").select("afa-24x-nvme").run()
    assert not at.exception and not at.error
    assert run_figures(at) == api_figures(default.with_overrides(AFA))
