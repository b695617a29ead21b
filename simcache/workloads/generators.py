"""I/O generators: what each VM asks for and when.

Each VM owns one :class:`IOStream` seeded from its own spawned stream. Draws
are vectorised in blocks (numpy) and handed out one by one, so the
simulation's hot path does no per-I/O numpy calls.

- Operation: write with probability ``1 - read_fraction``.
- Size: drawn from the weighted size mix of the I/O's op (``read_sizes`` /
  ``write_sizes`` when the workload gives them, else ``sizes``). With one mix
  for both ops the draws are those of a single mix; with per-op mixes one
  uniform per I/O is inverted through the cumulative weights of its op's mix.
- Offset, 4 KiB aligned, over the VM's working set: ``uniform``; ``zipf``
  (rank r has probability r^-theta / H(n, theta) over the working set's n
  blocks, exactly, with ranks scattered over the disk by a fixed bijection so
  hot blocks are not contiguous); ``hotspot`` (``hot_io_fraction`` of the I/Os
  uniform over the first ``hot_span_fraction`` of the working set, the rest
  uniform over the remainder); or ``sequential`` (each I/O follows the
  previous one, wrapping around). With ``sequential_run`` above 1, an I/O of
  the first three continues where the previous one ended with probability
  ``1 - 1 / sequential_run`` (geometric runs). :mod:`simcache.physics.locality` has
  the samplers.
- Open-loop gaps: Poisson (exponential gaps) or uniform (constant gaps);
  on/off duty cycles skip the off periods; a sine duty cycle modulates the
  rate by thinning a Poisson stream at the peak rate; a profile duty cycle
  (piecewise constant rates) stretches each gap through the profile's
  cumulative rate (a time change, exact for piecewise constant rates and one
  draw per arrival: thinning would draw peak/mean candidates per arrival, and
  measured profiles have peaks of 10-100 times their mean).
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING, Final

import numpy as np
from librt.strings import read_f64_le, read_i64_le

from simcache.physics.cluster import working_set_blocks
from simcache.physics.locality import ZipfRanks, hot_blocks, multiplier, run_starts, scatter
from simcache.spec import DutyCycle, Workload
from simcache.workloads.seeds import StreamSeed, generator

if TYPE_CHECKING:  # compiled, a C int64; to Python, int
    from mypy_extensions import i64

__all__ = ["BLOCK", "DutyClock", "IOStream", "StreamTables"]

_I64: Final = np.dtype("<i8")
_F64: Final = np.dtype("<f8")
# offsets are aligned to this many bytes (not Final: the estimate group imports it; see
# tests/sim/test_engine_build.py)
BLOCK = 4096
_BATCH: Final = 2048
"""Most I/Os (and gaps) a stream draws at once."""
_FIRST_BATCH: Final = 32
"""I/Os a stream draws first; each refill draws twice as many, up to ``_BATCH``. A run of
thousands of VMs that each issue a few I/Os then draws (and holds) a few per VM, not 2,048:
drawing them cost seconds and hundreds of MB."""


class DutyClock:
    """When a duty cycle is on, and the rate multiplier of a sine or profile cycle."""

    def __init__(self, duty: DutyCycle | None):
        self.duty = duty
        self._factors = np.ones(1)
        self._cumulative = np.array([0.0, 1.0])
        if duty is not None and duty.shape == "profile":
            assert duty.levels is not None
            levels = np.asarray(duty.levels, dtype=np.float64)
            self._factors = levels / levels.mean()
            # Work (intervals at the mean rate) done by the start of each interval of one cycle.
            self._cumulative = np.concatenate(([0.0], np.cumsum(self._factors)))
        # bisect on a list: faster than numpy per call
        self._cumulative_list: list[float] = self._cumulative.tolist()
        # The cycle's shape ("none" without one) and an on/off cycle's figures (0 otherwise) as
        # typed fields: compiled, each read of the spec's (an interpreted class) is a generic
        # attribute lookup, and they are read at every arrival (on_window, IOStream.next_gap).
        self.shape = "none" if duty is None else duty.shape
        self.onoff = self.shape == "onoff"
        self.on = self.off = self.phase = 0.0
        if duty is not None and self.onoff:
            assert duty.on is not None and duty.off is not None
            self.on, self.off, self.phase = duty.on, duty.off, duty.phase

    def on_window(self, now: float) -> tuple[float, float]:
        """(start, end) of the on period that contains ``now`` or, if off, of the next one.

        Both ends come from the cycle's index, not from ``now`` modulo the
        cycle, so they are consistent under rounding and ``end > now`` always
        (an on period ending within rounding distance of ``now`` is skipped).
        Without an on/off cycle the window is ``(now, inf)``.
        """
        if not self.onoff:
            return now, math.inf
        on = self.on
        phase = self.phase
        cycle = on + self.off
        index = math.floor((now + phase) / cycle)
        while True:
            start = index * cycle - phase
            end = start + on
            if end - now > 1e-9 * on:
                return max(start, now), end
            index += 1

    def is_on(self, now: float) -> bool:
        return self.on_window(now)[0] == now

    def next_on(self, now: float) -> float:
        """Start of the next on period (``now`` if on)."""
        return self.on_window(now)[0]

    def on_until(self, now: float) -> float:
        """End of the current on period (``now`` if off, infinite without an on/off cycle)."""
        start, end = self.on_window(now)
        return end if start == now else now

    def rate_factor(self, now: float) -> float:
        """The arrival rate at ``now`` over the mean rate."""
        duty = self.duty
        if duty is None or self.onoff:
            return 1.0
        if self.shape == "profile":
            assert duty.interval is not None
            index = math.floor((now + duty.phase) / duty.interval) % len(self._factors)
            return float(self._factors[index])
        assert duty.period is not None
        return 1.0 + duty.amplitude * math.sin(2.0 * math.pi * (now + duty.phase) / duty.period)

    @property
    def peak_factor(self) -> float:
        """The highest :meth:`rate_factor`."""
        duty = self.duty
        if duty is None or self.onoff:
            return 1.0
        if self.shape == "profile":
            return float(self._factors.max())
        return 1.0 + duty.amplitude

    def advance(self, now: float, work: float) -> float:
        """The time at which a profile cycle has done ``work`` seconds' worth of arrivals at the
        mean rate since ``now``.

        The profile's cumulative rate is piecewise linear; it is inverted by
        bisection over one cycle's cumulative sums, so zero-rate intervals are
        skipped without a loop.
        """
        duty = self.duty
        assert duty is not None and duty.interval is not None
        interval = duty.interval
        cumulative = self._cumulative
        count = len(self._factors)
        total = float(cumulative[-1])
        position = (now + duty.phase) / interval  # in intervals from the cycle's origin
        cycles = math.floor(position / count)
        within = position - cycles * count
        index = min(int(within), count - 1)
        done = (
            cycles * total
            + float(cumulative[index])
            + float(self._factors[index]) * (within - index)
        )
        target = done + work / interval
        cycles = math.floor(target / total)
        rest = target - cycles * total
        index = min(bisect.bisect_right(self._cumulative_list, rest) - 1, count - 1)
        # rounding put rest at the end of a rising stretch: the next busy interval
        while self._factors[index] == 0.0:
            index = (index + 1) % count
            if index == 0:
                cycles += 1
            rest = float(cumulative[index])
        position = (
            cycles * count + index + (rest - float(cumulative[index])) / float(self._factors[index])
        )
        return max(now, position * interval - duty.phase)


def _cumulative(probabilities: tuple[float, ...]) -> np.ndarray:
    """Cumulative probabilities of a mix, the last one exactly 1."""
    cumulative = np.cumsum(np.array(probabilities, dtype=np.float64))
    cumulative[-1] = 1.0
    return cumulative


class StreamTables:
    """What an :class:`IOStream` derives from its workload alone: the size mixes, the working set's
    blocks and their scatter, the Zipf law, the duty clock, the mean gap. Read only, so the VMs of
    a group share one (a 32-host build made them 192 times, about 20 us each)."""

    def __init__(self, workload: Workload):
        self.workload = workload
        sizes, probabilities = workload.op_size_mix(True)
        self.sizes = np.array(sizes, dtype=np.int64)
        self.choice_cdf = np.cumsum(np.array(probabilities))
        self.choice_cdf /= self.choice_cdf[-1]
        # Per-op mixes: each op's sizes and cumulative probabilities (the last forced to 1, so that
        # every draw lands).
        self.per_op = workload.per_op_sizes
        read_sizes, read_probabilities = workload.op_size_mix(False)
        self.read_sizes = np.array(read_sizes, dtype=np.int64)
        self.read_cumulative = _cumulative(read_probabilities)
        self.write_cumulative = _cumulative(probabilities)
        self.blocks = working_set_blocks(workload.working_set, BLOCK)
        self.zipf = (
            ZipfRanks(self.blocks, workload.zipf_theta) if workload.access == "zipf" else None
        )
        self.scatter = multiplier(self.blocks)
        self.hot = (
            hot_blocks(self.blocks, workload.hot_span_fraction or 0.0)
            if workload.access == "hotspot"
            else 0
        )
        self.clock = DutyClock(workload.duty_cycle)
        self.mean_gap = (
            1.0 / (workload.mean_rate * self.clock.peak_factor) if workload.mode == "open" else 0.0
        )


class IOStream:
    """One VM's sequence of I/Os and (open loop) arrival gaps."""

    def __init__(
        self,
        workload: Workload,
        seed: np.random.SeedSequence | StreamSeed,
        tables: StreamTables | None = None,
    ):
        """``tables``: its workload's (:class:`StreamTables`, shared by a group's VMs), else made
        here."""
        if tables is None:
            tables = StreamTables(workload)
        elif tables.workload is not workload:
            raise ValueError("the stream tables are another workload's")
        self.workload = workload
        self._rng = generator(seed)
        self._sizes = tables.sizes
        self._choice_cdf = tables.choice_cdf
        self._per_op = tables.per_op
        self._read_sizes = tables.read_sizes
        self._read_cumulative = tables.read_cumulative
        self._write_cumulative = tables.write_cumulative
        self._blocks = tables.blocks
        self._zipf = tables.zipf
        self._scatter = tables.scatter
        self._hot = tables.hot
        # sequential access and runs: the block after the previous I/O's last (-1: no I/O yet)
        self._cursor = -1 if workload.sequential_run > 1.0 else 0
        # The drawn batch, one little-endian column of bytes each (17 bytes an I/O, 8 a gap; as
        # Python lists of tuples, about 130 and 32: a 1,024-VM model held 340 MB of them), read one
        # I/O at a time in place (compiled, a native read each: no int or float object).
        self._writes = b""
        self._io_sizes = b""
        self._offsets = b""
        self._io_count: i64 = 0
        self._io_next: i64 = 0
        self._io_batch = _FIRST_BATCH
        self._gap_batch = _FIRST_BATCH
        self._gaps = b""
        self._gap_count: i64 = 0
        self._gap_next: i64 = 0
        self.clock = tables.clock
        self._mean_gap = tables.mean_gap
        # Evenly spaced arrivals start at a random phase, so that VMs are not in lock-step.
        self._uniform_arrivals = workload.arrivals == "uniform"
        self._first_gap_fraction: float | None = (
            float(self._rng.random()) if self._uniform_arrivals else None
        )

    def next_io(self) -> tuple[bool, int, int]:
        """(is_write, size in bytes, offset in bytes) of the next I/O."""
        i = self._io_next
        if i >= self._io_count:
            self._refill_ios()
            i = 0
        self._io_next = i + 1
        return (
            self._writes[i] != 0,
            read_i64_le(self._io_sizes, 8 * i),
            read_i64_le(self._offsets, 8 * i),
        )

    def _refill_ios(self) -> None:
        rng = self._rng
        workload = self.workload
        count = self._io_batch
        self._io_batch = min(2 * count, _BATCH)
        writes = rng.random(count) >= workload.read_fraction
        if self._per_op:
            sizes = self._op_sizes(rng, writes)
        elif len(self._sizes) > 1:
            # Generator.choice(len(sizes), count, p=probabilities) written out (the same draws,
            # without its checks of p at every call): one uniform per I/O, placed in the normalised
            # cumulative probabilities.
            sizes = self._sizes[np.searchsorted(self._choice_cdf, rng.random(count), side="right")]
        else:
            sizes = np.full(count, self._sizes[0])
        if workload.access == "sequential":
            spans = (sizes + BLOCK - 1) // BLOCK
            starts = (self._cursor + np.concatenate(([0], np.cumsum(spans)[:-1]))) % self._blocks
            self._cursor = int((self._cursor + spans.sum()) % self._blocks)
            blocks = starts
        else:
            blocks = self._random_blocks(rng, count)
            if workload.sequential_run > 1.0:
                blocks = self._in_runs(blocks, (sizes + BLOCK - 1) // BLOCK, rng)
        self._writes = writes.astype(np.int8).tobytes()
        self._io_sizes = sizes.astype(_I64).tobytes()
        self._offsets = (blocks * BLOCK).astype(_I64).tobytes()
        self._io_count = count
        self._io_next = 0

    def _op_sizes(self, rng: np.random.Generator, writes: np.ndarray) -> np.ndarray:
        """Each I/O's size from its op's mix: one uniform per I/O (drawn even for a one-size mix,
        so the stream's later draws do not depend on the mixes' lengths)."""
        u = rng.random(len(writes))
        read_index = np.minimum(
            np.searchsorted(self._read_cumulative, u, side="right"), len(self._read_sizes) - 1
        )
        write_index = np.minimum(
            np.searchsorted(self._write_cumulative, u, side="right"), len(self._sizes) - 1
        )
        return np.where(writes, self._sizes[write_index], self._read_sizes[read_index])

    def _random_blocks(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """A fresh position (block index) for each I/O of a batch: uniform, zipf or hotspot."""
        workload = self.workload
        if self._zipf is not None:
            return scatter(self._zipf.draw(rng, count) - 1, self._blocks, self._scatter)
        if workload.access == "hotspot":
            # One uniform per I/O: below hot_io_fraction it lands in the hot region, above it in the
            # cold one.
            share = workload.hot_io_fraction or 0.0
            u = rng.random(count)
            hot, cold = self._hot, self._blocks - self._hot
            blocks = np.where(
                u < share,
                np.floor(u / share * hot),
                hot + np.floor((u - share) / (1.0 - share) * cold),
            )
            return np.minimum(blocks.astype(np.int64), self._blocks - 1)
        return rng.integers(0, self._blocks, size=count)

    def _in_runs(
        self, fresh: np.ndarray, spans: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Blocks of a batch in sequential runs: an I/O that starts a run takes its fresh
        position, the others continue where the previous I/O ended (across batches too)."""
        count = len(fresh)
        starts = run_starts(rng, count, self.workload.sequential_run)
        if self._cursor < 0:
            starts[0] = True  # the stream's first I/O
        before = np.concatenate(([0], np.cumsum(spans)[:-1]))  # blocks of the batch's earlier I/Os
        # each I/O's run start (-1: the previous batch's)
        run = np.maximum.accumulate(np.where(starts, np.arange(count), -1))
        first = np.maximum(run, 0)
        base = np.where(run >= 0, fresh[first] - before[first], self._cursor)
        blocks = (base + before) % self._blocks
        self._cursor = int((blocks[-1] + spans[-1]) % self._blocks)
        return blocks

    def next_gap(self, now: float) -> float:
        """Seconds from ``now`` to the next open-loop arrival, honouring the duty cycle.

        Gaps are measured in on-time: a gap that outlasts an on period carries
        over into the next one (for Poisson arrivals this is the same law as
        starting afresh, by memorylessness).
        """
        clock = self.clock
        if clock.duty is None:
            # what the loop below returns without a duty cycle, bit for bit
            return (now + self._draw_gap()) - now
        shape = clock.shape
        if shape == "profile":
            # Gaps are drawn at the peak rate (the mean gap is set for thinning); at the mean rate
            # they are peak times longer.
            return clock.advance(now, self._draw_gap() * clock.peak_factor) - now
        t = now
        # 0 for a sine cycle, whose one window never ends (the loop below never skips periods)
        on = clock.on
        cycle = on + clock.off
        while True:
            gap = self._draw_gap()
            if not math.isfinite(gap):
                return math.inf  # a rate so small that the next arrival never comes
            while True:
                t, end = clock.on_window(t)
                if t + gap < end:
                    t += gap
                    break
                gap -= end - t
                t = end
                # Whole on periods the gap outlasts are skipped at once (all but the last, left to
                # the loop): a gap of years (a rate of 4e-9/s) over 10 ms on periods took billions
                # of passes.
                periods = gap / on if on > 0.0 else 0.0
                if not math.isfinite(periods):
                    return math.inf
                whole = math.floor(periods) - 1
                if whole > 0:
                    gap -= whole * on
                    t += whole * cycle
            if shape != "sine":
                return t - now
            if self._draw_uniform() * clock.peak_factor <= clock.rate_factor(t):
                return t - now  # kept by thinning

    def _draw_gap(self) -> float:
        if self._uniform_arrivals:
            if self._first_gap_fraction is not None:
                fraction, self._first_gap_fraction = self._first_gap_fraction, None
                return self._mean_gap * fraction
            return self._mean_gap
        i = self._gap_next
        if i >= self._gap_count:
            count = self._gap_batch
            self._gap_batch = min(2 * count, _BATCH)
            self._gaps = np.asarray(
                self._rng.exponential(self._mean_gap, count), dtype=_F64
            ).tobytes()
            self._gap_count = count
            i = 0
        self._gap_next = i + 1
        return read_f64_le(self._gaps, 8 * i)

    def _draw_uniform(self) -> float:
        return float(self._rng.random())
