"""The estimate of a tier of addressed placement (``placement = "addressed"``): ``c`` separate
first-come first-served queues, one per unit, each fed a uniformly random 1/c of the operations,
against exact queueing theory (Pollaczek-Khinchine)."""

from __future__ import annotations

import pytest

import simcache
from simcache.estimate import estimate
from simcache.physics.cluster import lognormal_quantiles

UNITS = 4
LATENCY = 100e-6  # s, a unit's mean read time
CV = 0.5  # its coefficient of variation (lognormal)
OVERHEAD = 20e-6  # s, command overhead (a delay, outside the queues)
BANDWIDTH = 4e9  # B/s, the transfer pipe
SIZE = 4096


def _reads(rate: float, placement: str) -> simcache.Scenario:
    """One host, a RAM-like tier of ``UNITS`` units, a Poisson stream of ``rate`` 4 KiB reads per
    s, all of them hits (a warm cache over a small working set): only tier reads."""
    return simcache.load_scenario(
        {
            "name": "addressed",
            "run": {"duration": "10s", "warmup": "1s", "sample_interval": "1s"},
            "cluster": {
                "hosts": 1,
                "tier": {
                    "profile": "ram-ddr4",
                    "channels": UNITS,
                    "placement": placement,
                    "service": "lognormal",
                    "service_cv": CV,
                    "command_overhead": OVERHEAD,
                    "read_latency": LATENCY,
                    "read_bandwidth": BANDWIDTH,
                    # a plain unit: no copy-thread time per byte (the RAM profile's channels)
                    "read_channel_bandwidth": None,
                    "write_channel_bandwidth": None,
                },
                "cache": {"warm": True},
                "peer_link": "10GbE",
                "storage_link": "10GbE",
            },
            "array": {"profile": "array-24x15k"},
            "groups": [
                {
                    "name": "r",
                    "policy": "WB+0",
                    "workload": {
                        "mode": "open",
                        "iops": rate,
                        "sizes": "4KiB",
                        "read_fraction": 1.0,
                        "working_set": "1GiB",
                    },
                }
            ],
        }
    )


@pytest.mark.parametrize("load", [0.3, 0.6, 0.9])
def test_open_reads_wait_as_one_mg1_queue_per_unit(load: float) -> None:
    # Random routing splits a Poisson stream of rate lambda into UNITS independent Poisson streams
    # of lambda / UNITS, each into a unit of its own: M/G/1 queues of load rho = lambda S / UNITS. A
    # unit holds a read for its latency times a lognormal factor (mean 1, CV) and then its transfer
    # t = SIZE / BANDWIDTH: mean S = L + t, second moment E[S^2] = L^2 (1 + CV^2) + 2 L t + t^2.
    # Pollaczek-Khinchine: W = (lambda / UNITS) E[S^2] / (2 (1 - rho)). The transfers then share one
    # pipe (an M/D/1 queue of rate lambda, service t): W_pipe = lambda t^2 / (2 (1 - lambda t)).
    # Mean response: overhead + S + W + W_pipe.
    transfer = SIZE / BANDWIDTH
    service = LATENCY + transfer
    second = LATENCY**2 * (1.0 + CV**2) + 2.0 * LATENCY * transfer + transfer**2
    rate = load * UNITS / service
    per_unit = rate / UNITS
    wait = per_unit * second / (2.0 * (1.0 - per_unit * service))
    pipe_wait = rate * transfer**2 / (2.0 * (1.0 - rate * transfer))
    result = estimate(_reads(rate, "addressed"))
    assert result.mean_ms("r", "read") == pytest.approx(
        (OVERHEAD + service + wait + pipe_wait) * 1e3, rel=1e-9
    )
    # Utilization per unit, as the simulator's meter counts it: rho, and a unit also counts busy
    # while its transfer waits for the pipe (lambda W_pipe such transfers on average, by Little's
    # law, over UNITS units).
    assert result.utilization["host0.tier"] == pytest.approx(
        load + rate * pipe_wait / UNITS, rel=1e-9
    )


def test_the_lognormal_table_has_the_cv_the_formula_assumes() -> None:
    # The formula's E[S^2] takes the unit-time factor's CV as given; the simulator draws it from
    # this table.
    table = lognormal_quantiles(CV)
    mean = sum(table) / len(table)
    variance = sum((x - mean) ** 2 for x in table) / len(table)
    assert mean == pytest.approx(1.0, rel=1e-3)
    assert variance**0.5 == pytest.approx(CV, rel=0.02)


def test_addressed_units_wait_longer_than_one_queue_before_them() -> None:
    # One queue in front of c units (M/G/c) waits less than c separate queues at the same load: an
    # arrival there takes whichever unit frees first.
    rate = 0.8 * UNITS / (LATENCY + SIZE / BANDWIDTH)
    shared = estimate(_reads(rate, "any-unit")).mean_ms("r", "read")
    separate = estimate(_reads(rate, "addressed")).mean_ms("r", "read")
    assert separate > 1.5 * shared
