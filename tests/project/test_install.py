"""What an install carries (simcache.spec.library): the scenario library, the example files and the
page.

The wheel itself is built and smoke-tested by .ci/run; these tests check, without building one,
that every file of scenarios/ and examples/ (and app.py) is reachable through the package's
resource lookup, that setup.py and MANIFEST.in ship each of them, and that built-in names work
from any working directory.
"""

from __future__ import annotations

import ast
import glob
import importlib.util
import os
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from importlib import resources
from pathlib import Path

import pytest
from support.paths import ROOT

import simcache
from simcache.cli import app as cli_app
from simcache.cli import main as cli
from simcache.spec import builtin_scenarios
from simcache.spec.library import (
    APP,
    EXAMPLES,
    SCENARIOS,
    app_file,
    example_files,
    local_or_example,
    scenario_files,
)


def files_in(folder: str) -> dict[str, bytes]:
    paths = sorted((ROOT / folder).iterdir())
    return {path.name: path.read_bytes() for path in paths if path.is_file()}


def reachable(package: str) -> dict[str, bytes]:
    """Every file of a data package, read through importlib.resources."""
    entries = resources.files(package).iterdir()
    return {entry.name: entry.read_bytes() for entry in entries if entry.is_file()}


@pytest.mark.parametrize(("folder", "package"), [("scenarios", SCENARIOS), ("examples", EXAMPLES)])
def test_every_file_of_the_folder_is_reachable_as_package_data(folder: str, package: str) -> None:
    assert files_in(folder)
    assert reachable(package) == files_in(folder)


def test_the_lookups_list_the_library() -> None:
    assert {f"{name}.toml" for name in scenario_files()} == set(files_in("scenarios"))
    assert builtin_scenarios() == scenario_files()
    assert list(builtin_scenarios())[:2] == ["array_rebuild", "backing_array"]  # sorted
    assert set(example_files()) == set(files_in("examples"))
    page = app_file()
    assert page is not None and page.read_bytes() == (ROOT / "app.py").read_bytes()


def test_scenarios_and_examples_sit_side_by_side_as_in_the_repository() -> None:
    """A built-in scenario's relative ``../examples/FILE`` (a trace) names the shipped example."""
    default = scenario_files()["default"]
    for name, path in example_files().items():
        assert (default.parent / ".." / "examples" / name).resolve() == path.resolve()


def test_setup_and_the_manifest_ship_every_file() -> None:
    """setup.py copies LIBRARY_FILES into the wheel's simcache/spec/library/, MANIFEST.in to
    sdists."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    assignments = [node for node in tree.body if isinstance(node, ast.Assign)]
    (patterns,) = [
        ast.literal_eval(node.value)
        for node in assignments
        if any(getattr(target, "id", None) == "LIBRARY_FILES" for target in node.targets)
    ]
    shipped = {Path(path) for pattern in patterns for path in glob.glob(pattern, root_dir=ROOT)}
    folders = ("scenarios", "examples")
    expected = {Path(folder, name) for folder in folders for name in files_in(folder)}
    assert shipped == expected | {Path("app.py")}
    manifest = (ROOT / "MANIFEST.in").read_text().splitlines()
    assert {"include app.py", "graft scenarios", "graft examples"} <= set(manifest)
    assert APP.rsplit(".", 1)[1] + ".py" == "app.py"


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter started in ``cwd`` (the repository is not on its path)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    command = [sys.executable, "-c", code]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_built_in_names_work_from_another_working_directory(tmp_path: Path) -> None:
    code = (
        "import simcache, sys\n"
        "from simcache.cli.main import main\n"
        "assert simcache.load_scenario('default').name == 'default'\n"
        "print(sorted(simcache.spec.builtin_scenarios())[0])\n"
        "sys.exit(main(['import', 'oltp.fio', '-o', 'x.toml']))\n"
    )
    done = run_python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "array_rebuild"
    assert "scenario written to x.toml" in done.stdout
    assert simcache.load_scenario(tmp_path / "x.toml").groups[0].name == "oltp"


def test_a_local_file_comes_before_a_shipped_example(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert local_or_example("oltp.fio") == example_files()["oltp.fio"]
    assert local_or_example("examples/oltp.fio") == example_files()["oltp.fio"]
    assert local_or_example("elsewhere/oltp.fio") == Path("elsewhere/oltp.fio")
    assert local_or_example("nothing.fio") == Path("nothing.fio")
    Path("oltp.fio").write_text("[job]\nrw=randread\n")
    assert local_or_example("oltp.fio") == Path("oltp.fio")


def test_the_apps_settings_are_those_of_its_streamlit_config() -> None:
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    given = dict(option.removeprefix("--").split("=", 1) for option in cli_app.SETTINGS)
    flat = {f"{part}.{key}": v for part, table in config.items() for key, v in table.items()}

    def text(value: object) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    written = {key: text(value) for key, value in flat.items()}
    assert given == written


def test_the_app_command_runs_the_shipped_page_with_options_last() -> None:
    page = app_file()
    assert page is not None
    command = cli_app.app_command(page, ["--server.port=8999"])
    assert command[:5] == [sys.executable, "-m", "streamlit", "run", str(page)]
    assert command[-1] == "--server.port=8999"


def test_without_the_app_extra_the_app_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    real = importlib.util.find_spec
    without = lambda name: None if name == "streamlit" else real(name)  # noqa: E731
    monkeypatch.setattr(importlib.util, "find_spec", without)
    assert cli.main(["app"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'simcache[app]'" in err and "streamlit" in err


def test_the_app_commands_help_says_what_it_serves_and_how_to_pass_streamlits_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``simcache app --help`` had a bare usage line: now what the page does, the extra it needs,
    and Streamlit options that work (each one `streamlit run` takes)."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(["app", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: simcache app [STREAMLIT OPTIONS]")
    assert "pip install 'simcache[app]'" in out and "what-if page" in out
    examples = [line.split()[2] for line in out.splitlines() if line.startswith("  simcache app ")]
    assert examples == ["--server.port=8502", "--server.address=0.0.0.0", "--server.headless=true"]
    # each is an option of `streamlit run`: a config key of Streamlit's (get_option raises on
    # one it does not know)
    if importlib.util.find_spec("streamlit") is not None:
        from streamlit import config

        for option in examples:
            config.get_option(option.removeprefix("--").split("=")[0])


def test_other_commands_still_refuse_unknown_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "default", "--server.port=1"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --server.port=1" in capsys.readouterr().err


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_simcache_app_serves_the_page_from_another_working_directory(tmp_path: Path) -> None:
    pytest.importorskip("streamlit")
    port = free_port()
    options = ["--server.headless=true", f"--server.port={port}", "--server.address=127.0.0.1"]
    code = "import sys; from simcache.cli.main import main; sys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", code, "app", *options]
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(command, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text()
            try:
                health = f"http://127.0.0.1:{port}/_stcore/health"
                with urllib.request.urlopen(health, timeout=2) as answer:
                    assert answer.read() == b"ok"
                    break
            except OSError:
                assert time.monotonic() < deadline, "streamlit did not answer"
                time.sleep(0.3)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
