"""``--scheduler`` / ``scheduler=`` addresses that cannot be used (review 66): each is one line,
``error: --scheduler ADDRESS: ...``, exit 2, within seconds, never a traceback or a hang.

- a malformed address (``nonsense``, ``tcp://127.0.0.1:8799x``) is refused before anything runs,
  saying the form expected;
- a closed port is "cannot reach the Dask scheduler", not an "invalid scenario" of ``<sweep>``;
- a TCP server that is not a Dask scheduler (an HTTP server, garbage read as a Dask frame length, a
  server that never answers) is "no Dask scheduler answered there", within the connect timeout, and
  Ctrl-C stops the wait.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import call

from simcache.runs.sweep import sweep
from simcache.runs.workers import SchedulerError, reach_scheduler, scheduler_address
from simcache.spec import load_scenario

SIZE_ARGS = ["default", "--target", "write p99 <= 5ms", "--vary", "cluster.hosts = 5:2"]
HTTP_REPLY = b"HTTP/1.0 400 Bad request\r\nContent-Type: text/html\r\n\r\n<html>bad</html>\r\n"


def sweep_file(tmp_path: Path) -> Path:
    path = tmp_path / "sw.toml"
    path.write_text('scenario = "default"\nseeds = [1]\n[grid]\n"cluster.hosts" = [4]\n', "utf-8")
    return path


def command(kind: str, tmp_path: Path, address: str) -> list[str]:
    what = [str(sweep_file(tmp_path))] if kind == "sweep" else SIZE_ARGS
    return [kind, *what, "--duration", "1s", "--scheduler", address]


def one_error_line(stderr: str, address: str) -> str:
    """The one line printed, after its ``error: --scheduler ADDRESS: `` head."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    head = f"error: --scheduler {address}: "
    assert lines[0].startswith(head), stderr
    return lines[0][len(head) :]


@contextlib.contextmanager
def not_dask(behaviour: str) -> Iterator[tuple[str, threading.Event]]:
    """A TCP server on a free local port that is not a Dask scheduler; its address and an event
    set when it accepts a connection. ``http``: replies as an HTTP server does to a request it
    cannot parse, and closes; ``garbage``: sends what Dask reads as a frame of exabytes and keeps
    the connection open; ``silent``: accepts and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    accepted = threading.Event()
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.set()
            held.append(conn)
            with contextlib.suppress(OSError):
                if behaviour == "http":
                    conn.settimeout(1.0)
                    with contextlib.suppress(OSError):
                        conn.recv(65536)
                    conn.sendall(HTTP_REPLY)
                    conn.close()
                elif behaviour == "garbage":
                    conn.sendall(HTTP_REPLY)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join(5)
        server.close()
        for conn in held:
            conn.close()


@contextlib.contextmanager
def closed_port() -> Iterator[str]:
    """The address of a local port that refuses connections (bound, not listening: no other
    process can take it meanwhile)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"tcp://127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("kind", ["sweep", "size"])
@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("nonsense", "has no port (HOST:PORT)"),
        ("tcp://127.0.0.1:8799x", "the port '8799x' is not a number"),
        ("tcp://127.0.0.1:99999", "the port 99999 is not between 1 and 65535"),
        ("http://127.0.0.1:8786", "http:// is not a protocol of Dask's"),
        ("tcp://:8786", "has no host"),
    ],
)
def test_a_malformed_address_is_one_line_naming_the_form(
    kind: str, address: str, problem: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    code, out, err = call(command(kind, tmp_path, address))
    assert code == 2 and out == "", err
    assert one_error_line(err, address) == (
        f'not a Dask scheduler address: {problem}; give "local" (a local Dask cluster) or a '
        "running scheduler's tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786)"
    )
    assert time.monotonic() - started < 10  # refused before any connection or run


@pytest.mark.parametrize("address", ["tcp://10.0.0.5:8786", "127.0.0.1:8786", "tcp://[::1]:8786"])
def test_well_formed_addresses_pass_the_check(address: str) -> None:
    assert scheduler_address(address) is not None
    assert scheduler_address("local") is None


def test_the_api_raises_the_same_one_line_error() -> None:
    with pytest.raises(SchedulerError) as caught:
        sweep(load_scenario("default"), {"cluster.hosts": [4]}, seeds=[1], scheduler="nonsense")
    assert str(caught.value).startswith("--scheduler nonsense: not a Dask scheduler address")
    assert "\n" not in str(caught.value)
    with pytest.raises(SchedulerError, match=r"^--scheduler 8786: .*: int given, not str; give"):
        scheduler_address(8786)


@pytest.mark.parametrize("kind", ["sweep", "size"])
def test_a_closed_port_cannot_be_reached_and_is_no_invalid_scenario(
    kind: str, tmp_path: Path
) -> None:
    pytest.importorskip("distributed")
    with closed_port() as address:
        started = time.monotonic()
        code, out, err = call(command(kind, tmp_path, address))
    assert code == 2 and out == "", err
    assert one_error_line(err, address) == (
        "cannot reach the Dask scheduler: nothing accepted a connection there within 10 s "
        "(Connection refused); is the scheduler running, at this address?"
    )
    assert time.monotonic() - started < 30


NOT_DASK = (
    "no Dask scheduler answered there within 10 s (is it a Dask scheduler's address? e.g. "
    "tcp://HOST:8786)"
)


@pytest.mark.parametrize("kind", ["sweep", "size"])
def test_an_http_server_is_no_dask_scheduler_within_the_timeout(kind: str, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    with not_dask("http") as (address, accepted):
        started = time.monotonic()
        code, out, err = call(command(kind, tmp_path, address))
        assert accepted.is_set()
    assert code == 2 and out == "", err
    assert one_error_line(err, address) == NOT_DASK
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("behaviour", ["garbage", "silent"])
def test_garbage_or_silence_is_no_dask_scheduler_not_a_traceback(behaviour: str) -> None:
    """A reply read as a frame of exabytes (numpy's allocation error), or none at all: the same
    one error, within the timeout given."""
    pytest.importorskip("distributed")
    with not_dask(behaviour) as (address, _):
        started = time.monotonic()
        with pytest.raises(SchedulerError) as caught:
            reach_scheduler(address, timeout=2)
    assert str(caught.value) == (
        f"--scheduler {address}: no Dask scheduler answered there within 2 s (is it a Dask "
        "scheduler's address? e.g. tcp://HOST:8786)"
    )
    assert time.monotonic() - started < 15


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_stops_the_wait_for_a_silent_scheduler(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    with not_dask("silent") as (address, accepted):
        child = subprocess.Popen(
            [sys.executable, "-m", "simcache", *command("sweep", tmp_path, address)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "SIMCACHE_PURE_PYTHON": os.environ.get("SIMCACHE_PURE_PYTHON", "1")},
            # a child of a non-interactive shell may start with SIGINT ignored
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            assert accepted.wait(60), "the sweep never connected"
            time.sleep(0.5)  # in the wait for an answer
            sent = time.monotonic()
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=20)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
    assert child.returncode == 130, err
    assert err.strip().splitlines()[-1] == "interrupted", err
    assert time.monotonic() - sent < 5
