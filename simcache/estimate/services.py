"""Service times of the estimate's stations: tier operations, spindle operations of the array, link
transfers.

What one operation costs at a station, before any queueing (``docs/estimate.md``,
Service times), built from the derived quantities the simulator uses too
(:mod:`simcache.physics.cluster`: pipe rates, seek law, RAID layout, framing, acks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from simcache.estimate.theory.numeric import Floats
from simcache.estimate.theory.queueing import expected_max_normal
from simcache.estimate.theory.stations import (
    ARRAY,
    CONTROLLER,
    DELAY,
    GC,
    PAST_CLIFF,
    PIPE,
    PIPE_SLOT,
    QUEUE,
    SPINDLE,
    TIER,
    Step,
)
from simcache.physics.array import (
    cache_ack_seconds,
    chunk_copies,
    read_modify_write,
    span_fraction,
    stripe_width,
)
from simcache.physics.cluster import (
    ack_seconds,
    clean_pool_depth,
    framed_bytes,
    gc_refill_rate,
    pipe_rate,
    read_channel_seconds,
    tier_service_seconds,
    write_channel_seconds,
)
from simcache.physics.drive import (
    SeekCurve,
    drive_seek_curve,
    flash_op_seconds,
    mean_transfer_seconds,
    queued_positioning_moments,
    revolution_seconds,
    seek_span,
    spindle_op_seconds,
    spindle_op_variance,
)
from simcache.spec import Scenario

__all__ = ["NO_STREAMING", "DestageSteps", "ServiceTimes", "Streaming"]

# (share of array operations that start where the spindle's head is, share that also find it still
# busy with their predecessor): see ServiceTimes.streaming_share
Streaming = tuple[float, float]
NO_STREAMING: Streaming = (0.0, 0.0)


@dataclass(frozen=True)
class DestageSteps:
    """Service times of one destage batch (see :meth:`ServiceTimes.destage_steps`)."""

    service: Floats  # s, per FCFS step
    scv: Floats
    share: Floats  # arrivals per batch at the step's station
    spread: Floats  # E[max of normals] of a spindle step's operations, else 0
    wire: float  # s on the storage link at line rate


class ServiceTimes:
    """The tier's, the array's and the links' service times of a scenario, as steps at its stations.

    ``per_host`` and ``shared``: the station numbering (see
    :class:`simcache.estimate.layout.Layout`).
    """

    def __init__(self, scenario: Scenario, per_host: int, shared: int):
        self.per_host = per_host
        self.shared = shared
        cluster = scenario.cluster
        tier = cluster.tier
        self.tier_read_latency = tier.read_latency
        self.tier_write_latency = tier.write_latency
        # s per byte a read holds its unit after its latency (die to controller; 0 if unset)
        self.read_channel = read_channel_seconds(tier)
        # and a write's, to its unit (a RAM tier's copy thread; 0 if unset)
        self.write_channel = write_channel_seconds(tier)
        self.exponential_tier = tier.service == "exponential"
        # Destage reads: one operation per batch (fcfs), else background requests of at most this
        # many bytes.
        self.destage_request = (
            math.inf if tier.scheduling == "fcfs" else float(tier.background_request)
        )
        self.read_rate = pipe_rate(tier.read_bandwidth, tier.controller_bandwidth, tier.interface)
        self.write_rate = pipe_rate(tier.write_bandwidth, tier.controller_bandwidth, tier.interface)
        self.command_overhead = tier.command_overhead
        self.read_command = 1.0 / tier.read_iops_limit if tier.read_iops_limit else 0.0
        self.write_command = 1.0 / tier.write_iops_limit if tier.write_iops_limit else 0.0
        # A unit's time: the latency times a lognormal factor of mean 1 and CV service_cv, plus with
        # probability p an exponential stall of mean T (mean p T, second moment 2 p T^2).
        self.unit_cv = tier.service_cv or 0.0
        # a write's own spread (write_service_cv) where set
        self.write_unit_cv = (
            tier.write_service_cv if tier.write_service_cv is not None else self.unit_cv
        )
        self.stall_mean = (tier.stall_probability or 0.0) * (tier.stall_time or 0.0)
        self.stall_variance = (
            2.0 * (tier.stall_probability or 0.0) * (tier.stall_time or 0.0) ** 2
            - self.stall_mean**2
        )
        self.gc_rate = gc_refill_rate(tier)
        self.clean_pool = clean_pool_depth(tier.clean_pool)
        # Fresh out of the box the whole capacity is clean (as simcache.sim.components.tier.Tier
        # starts it).
        self.initial_pool = (
            max(self.clean_pool, float(tier.capacity))
            if tier.condition == "fresh"
            else self.clean_pool
        )
        self.storage_link = cluster.storage_link
        # a transfer runs at the slower port
        self.storage_rate = min(cluster.storage_link.bandwidth, scenario.array.port.bandwidth)
        array = scenario.array
        drive = array.drive
        # A flash drive: each of its `parallelism` units is a server of its own (the simulator gives
        # an operation the drive's earliest free unit; the estimate spreads operations over all
        # units of all drives alike).
        self.flash = drive.media == "flash"
        self.spindles = array.spindles * drive.parallelism
        self.revolution = revolution_seconds(drive.rpm) if drive.rpm is not None else 0.0
        self.seek = (
            drive_seek_curve(drive)
            if not self.flash
            else SeekCurve(0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
        )
        self.read_time = drive.read_time if drive.read_time is not None else 0.0
        self.write_time = drive.write_time if drive.write_time is not None else 0.0
        # command overhead of every operation that positions the head
        self.overhead = drive.overhead
        self.span = seek_span(span_fraction(array, scenario.data_bytes))
        # Zoned recording: the mean seconds per byte over the span the data covers
        # (simcache.physics.drive.zone_rate).
        self.media = 1.0 / mean_transfer_seconds(1.0, drive.media_rate, drive.inner_rate, self.span)
        # A reordering drive (command_queueing > 1): the positioning of a random operation is the
        # least of the commands it chooses among, as many as the closed loops keep outstanding per
        # spindle (at most the drive's queue_depth), less the one in service and reorder_lag, at
        # most command_queueing
        # (queued_positioning_moments: candidates drawn afresh).
        self.queued: tuple[float, float] | None = None
        if not self.flash and drive.command_queueing > 1:
            outstanding = sum(
                scenario.group_vm_count(group) * group.workload.workers * group.workload.outstanding
                for group in scenario.groups
                if group.workload.mode == "closed"
            )
            candidates = min(
                min(round(outstanding / array.spindles), drive.queue_depth) - 1 - drive.reorder_lag,
                drive.command_queueing,
            )
            if candidates > 1:
                self.queued = queued_positioning_moments(
                    self.seek,
                    self.span,
                    self.revolution,
                    drive.overhead,
                    candidates,
                    drive.reorder == "seek",
                )
        self.copies = chunk_copies(array.raid, array.spindles)
        self.rmw = read_modify_write(array.raid)
        self.stripe = array.stripe
        self.width = stripe_width(array.raid, array.spindles)
        self.cache_ack = cache_ack_seconds(array)
        self.ack_seconds = ack_seconds(cluster.peer_link)
        self._batch_requests: dict[tuple[float, int, Streaming], tuple[float, float, float]] = {}
        self._destage_steps: dict[tuple[float, int, Streaming], DestageSteps] = {}

    def tier_steps(
        self,
        host: int,
        size: float,
        size_sq: float,
        is_write: bool,
        gc_factor: float = 1.0,
        front: bool = True,
    ) -> list[Step]:
        """Steps of one tier operation of mean ``size`` (``size_sq``: mean squared size).

        With ``front`` (a VM's I/O; not the destager's reads, whose steps the solver sets apart),
        the command overhead (a delay) and the controller's command processor (a FCFS station) come
        first. A write's next step is the GC server, present only while the host's tier is past its
        cliff, charged ``gc_factor`` of the write's bytes
        (:func:`simcache.physics.cluster.write_gc_factor`).
        """
        base = host * self.per_host
        latency = self.tier_write_latency if is_write else self.tier_read_latency
        per_byte = 1.0 / (self.write_rate if is_write else self.read_rate)
        # an operation's channel time: deterministic per byte, on the unit (as the simulator's)
        channel = self.write_channel if is_write else self.read_channel
        size_scv = max(0.0, size_sq / size**2 - 1.0)
        steps = []
        if front and self.command_overhead > 0:
            steps.append(Step(DELAY, service=self.command_overhead))
        command = self.write_command if is_write else self.read_command
        if front and command > 0:
            steps.append(Step(QUEUE, station=base + CONTROLLER, service=command, scv=0.0))
        if is_write and self.gc_rate < math.inf:
            # Past the cliff the pool refills at gc_rate: a server of that rate. Foreground passes
            # (gc_pass) bunch the waiting into stalls but leave the rate, hence a saturated closed
            # loop's mean, alone.
            steps.append(
                Step(
                    QUEUE,
                    station=base + GC,
                    scv=size_scv,
                    switch=PAST_CLIFF,
                    switch_host=host,
                    switched_service=size * gc_factor / self.gc_rate,
                )
            )
        mean = tier_service_seconds(latency + self.stall_mean, size, per_byte + channel)
        if self.exponential_tier:
            steps.append(Step(QUEUE, station=base + TIER, service=mean, scv=1.0))
            return steps
        variance = (
            (per_byte + channel) ** 2 * max(0.0, size_sq - size * size)
            + ((self.write_unit_cv if is_write else self.unit_cv) * latency) ** 2
            + self.stall_variance
        )
        steps.append(
            Step(
                QUEUE,
                station=base + TIER,
                service=mean,
                scv=variance / mean**2 if mean > 0 else 0.0,
            )
        )
        transfer = size * per_byte
        if transfer > 0:
            steps.append(Step(PIPE, station=base + PIPE_SLOT, service=transfer, scv=size_scv))
        return steps

    def spindle_op(
        self, chunk: float, is_write: bool, seek_scale: float, streaming: Streaming = NO_STREAMING
    ) -> tuple[float, float]:
        """Mean and variance (s, s^2) of one chunk operation on one spindle.

        The seek is the seek curve's mean over two uniform positions in ``span x seek_scale`` of the
        stroke (mean distance a third of it) and the rotation is uniform over a revolution, except
        for the shares in ``streaming`` (:meth:`streaming_share`): operations that start where the
        head is skip the seek, and those that also find the spindle still busy with their
        predecessor skip the rotation too. Uniform access is priced exactly; zipf access scatters
        its hot blocks over the working set, so it is priced as uniform too (its repeated hits on
        one block seek less in the simulator). The drive's command overhead is added to every
        operation that positions the head (all but those on the fly), as the simulator adds it. The
        drive's and the controller's read caches are not priced: every read is costed as a miss (an
        upper bound on the array's read cost; the simulator's caches start empty and warm up during
        a run).
        """
        rmw = is_write and self.rmw
        if self.flash:  # no seek, no rotation: deterministic (flash_op_seconds)
            access = self.write_time if is_write and not rmw else self.read_time
            return flash_op_seconds(access, chunk / self.media, self.write_time, rmw), 0.0
        revolution = self.revolution
        if self.queued is not None and seek_scale == 1.0 and streaming == NO_STREAMING:
            positioning, square = self.queued
            return spindle_op_seconds(positioning, 0.0, chunk / self.media, revolution, rmw), max(
                0.0, square - positioning**2
            )
        seek, seek_square = self.seek.moments(self.span * seek_scale)
        overhead = self.overhead
        if overhead:
            seek_square += 2.0 * overhead * seek + overhead * overhead
            seek += overhead
        if streaming == NO_STREAMING:
            variance = spindle_op_variance(seek, seek_square, revolution)
            # The transfer as a division (the model multiplies by the reciprocal rate it keeps): the
            # estimate's bits.
            return spindle_op_seconds(
                seek, revolution / 2.0, chunk / self.media, revolution, rmw
            ), variance
        at_head, on_the_fly = streaming
        random, rotating = 1.0 - at_head, at_head - on_the_fly
        # Positioning (seek + rotation) as a mixture: random ops, ops at the head that wait a
        # rotation, ops on the fly.
        positioning = random * (seek + revolution / 2.0) + rotating * (overhead + revolution / 2.0)
        square = random * (seek_square + seek * revolution + revolution**2 / 3.0) + rotating * (
            overhead * overhead + overhead * revolution + revolution**2 / 3.0
        )
        return spindle_op_seconds(positioning, 0.0, chunk / self.media, revolution, rmw), max(
            0.0, square - positioning**2
        )

    def array_request(
        self,
        runs: list[float],
        is_write: bool,
        seek_scale: float,
        streaming: Streaming = NO_STREAMING,
    ) -> tuple[float, float, float]:
        """(spindle operations, mean and variance of one operation) of a request of contiguous
        ``runs`` bytes, a share ``streaming`` of its operations starting where the head is (see
        :meth:`streaming_share`)."""
        operations = 0.0
        busy = 0.0
        second = 0.0
        stripe = self.stripe
        copies = self.copies if is_write else 1
        for run in runs:
            full, rest = divmod(run, stripe)
            for chunk, count in ((stripe, full), (rest, 1 if rest > 0 else 0)):
                if count:
                    mean, variance = self.spindle_op(chunk, is_write, seek_scale, streaming)
                    operations += count * copies
                    busy += count * copies * mean
                    second += count * copies * (variance + mean * mean)
        mean = busy / operations
        return operations, mean, max(0.0, second / operations - mean * mean)

    def batch_request(
        self, batch: float, runs: int, unmoved: Streaming = NO_STREAMING
    ) -> tuple[float, float, float]:
        """:meth:`array_request` of a destage batch of ``runs`` equal runs, sorted: each spindle's
        first seek random, its others over ``span / (k + 1)``, ``k`` the runs per spindle group it
        received.

        ``unmoved``: the shares of the batch's runs from sequentially writing VMs whose spindle head
        no other I/O moved since their last destage, and of those whose spindle is moreover still
        busy with it (:meth:`head_unmoved`); of those, a run shorter than a stripe unit continues in
        the unit its predecessor ended in, on the spindle whose head is there
        (:meth:`streaming_share`).
        """
        key = (batch, runs, unmoved)
        request = self._batch_requests.get(key)
        if request is None:
            # The runs are equal: the request is `runs` times one run's operations, of the same mean
            # and variance. The runs land on `touched` of the stripe width's spindle groups; each
            # group's elevator sweeps its share in one pass (simcache.physics.drive.elevator_order):
            # the first seek from wherever its head was (random), the others across the sorted gaps,
            # span / (share + 1) apart.
            run = batch / runs
            streaming = self.streaming_share(run, unmoved)
            touched = self.width * (1.0 - (1.0 - 1.0 / self.width) ** runs)
            operations, first_mean, first_variance = self.array_request([run], True, 1.0, streaming)
            _, swept_mean, swept_variance = self.array_request(
                [run], True, touched / (runs + touched), streaming
            )
            first = touched / runs
            mean = first * first_mean + (1.0 - first) * swept_mean
            second = first * (first_variance + first_mean**2) + (1.0 - first) * (
                swept_variance + swept_mean**2
            )
            request = self._batch_requests[key] = (
                operations * runs,
                mean,
                max(0.0, second - mean * mean),
            )
        return request

    def head_unmoved(self, rate: float, array_rate: float) -> Streaming:
        """For a sequentially writing VM issuing ``rate`` array I/Os per s, with ``array_rate`` I/Os
        per s reaching the array in all: the probability that no other I/O moved a spindle's head
        between two of its I/Os, and the probability that moreover the spindle is still busy with
        the first when the second arrives.

        While the VM's stream is in one stripe unit its I/Os all go to that unit's spindle; the
        others spread over the stripe width's spindles. Taken as Poisson: ``exp(-others / rate)``,
        others the other I/Os per s per spindle (paced streams interleave more regularly, so this
        errs towards streaming); still busy: ``1 - exp(-rate x positioning)``, the predecessor's
        mean positioning standing for its remaining time.
        """
        if rate <= 0.0:
            return NO_STREAMING
        others = max(0.0, array_rate - rate) / self.width
        unmoved = math.exp(-others / rate)
        positioning = self.seek.moments(self.span)[0] + self.revolution / 2.0
        return unmoved, unmoved * (1.0 - math.exp(-rate * positioning))

    def streaming_share(self, size: float, unmoved: Streaming) -> Streaming:
        """Shares of a sequential VM's array I/Os of ``size`` bytes that start where the
        spindle's head is (no seek), and that also find the spindle still busy with their
        predecessor (no rotation either): those continuing in the stripe unit their predecessor
        ended in (``1 - size / stripe``) times the probabilities ``unmoved``
        (:meth:`head_unmoved`)."""
        continuing = max(0.0, 1.0 - size / self.stripe)
        return unmoved[0] * continuing, unmoved[1] * continuing

    def destage_steps(
        self, batch: float, runs: int, unmoved: Streaming = NO_STREAMING
    ) -> DestageSteps:
        """Service times of one destage batch of ``batch`` bytes in ``runs`` runs: the tier
        read's steps then the array write's spindle step (the order of
        :attr:`simcache.estimate.network.Network.destage_fcfs`), and the storage transfer."""
        key = (batch, runs, unmoved)
        steps = self._destage_steps.get(key)
        if steps is None:
            tier = self.tier_steps(0, batch, batch * batch, False, front=False)
            # each background request holds a channel for the read latency
            if not self.exponential_tier:
                channel = tier[0]
                tier[0] = replace(
                    channel,
                    service=channel.service
                    + self.destage_read_latency(batch)
                    - self.tier_read_latency,
                )
            fcfs = tier + [self.spindle_step(*self.batch_request(batch, runs, unmoved))]
            steps = self._destage_steps[key] = DestageSteps(
                service=np.array([s.service for s in fcfs]),
                scv=np.array([s.scv for s in fcfs]),
                share=np.array(
                    [s.visits / self.spindles if s.kind == SPINDLE else 1.0 for s in fcfs]
                ),
                spread=np.array(
                    [expected_max_normal(s.visits) if s.kind == SPINDLE else 0.0 for s in fcfs]
                ),
                wire=self.storage_seconds(batch),
            )
        return steps

    def destage_read_latency(self, batch: float) -> float:
        """Seconds of read latency a destage batch of ``batch`` bytes pays: one per background
        request it is read in."""
        requests = (
            1.0
            if math.isinf(self.destage_request)
            else max(1.0, math.ceil(batch / self.destage_request))
        )
        return requests * self.tier_read_latency

    def spindle_step(self, operations: float, mean: float, variance: float) -> Step:
        """The array step of a request of ``operations`` spindle operations of ``mean`` and
        ``variance`` each."""
        return Step(
            SPINDLE,
            station=self.shared + ARRAY,
            service=mean,
            scv=variance / mean**2,
            visits=operations,
        )

    def storage_seconds(self, nbytes: float) -> float:
        """Time (s) of ``nbytes`` of payload, framed for the storage link, at the slower of its
        line rate and the array port's (the simulator's flow runs at its path's slowest port)."""
        return framed_bytes(self.storage_link, nbytes)[0] / self.storage_rate
