"""The fields of a device, link or array description that the physics reads, as protocols.

The physics sits below the scenario schema (:mod:`simcache.spec`), so the schema can check a
description against the physics (a drive's seek curve, a rebuild's share of the spindles) while the
physics knows nothing of how descriptions are read and validated. Any object with these attributes
will do; the schema's ``TierSpec``, ``LinkSpec``, ``DriveSpec``, ``ArraySpec`` and ``ClusterSpec``
are the ones the simulator passes. Units as in the schema: seconds, bytes, bytes per second.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["ArrayShape", "CacheShape", "ClusterShape", "DriveShape", "LinkShape", "TierShape"]


class TierShape(Protocol):
    """A flash or RAM tier's size, parallel units, host path and sustained-write cliff."""

    @property
    def capacity(self) -> int: ...
    @property
    def write_bandwidth(self) -> float: ...
    @property
    def write_amplification(self) -> float | None: ...
    @property
    def gc_rate(self) -> float | None: ...
    @property
    def clean_pool(self) -> int | None: ...
    @property
    def erase_block(self) -> int | None: ...
    @property
    def read_bandwidth(self) -> float: ...
    @property
    def controller_bandwidth(self) -> float | None: ...
    @property
    def interface(self) -> str | None: ...
    @property
    def channels(self) -> int: ...
    @property
    def dies(self) -> int: ...
    @property
    def read_channel_bandwidth(self) -> float | None: ...
    @property
    def write_channel_bandwidth(self) -> float | None: ...


class LinkShape(Protocol):
    """A network link's line rate, latency and packet framing."""

    @property
    def bandwidth(self) -> float: ...
    @property
    def latency(self) -> float: ...
    @property
    def mtu(self) -> int: ...
    @property
    def header_bytes(self) -> int: ...
    @property
    def framing_bytes(self) -> int: ...


class CacheShape(Protocol):
    """A host read cache's size (``None``: the tier's capacity) and line."""

    @property
    def capacity(self) -> int | None: ...
    @property
    def line(self) -> int: ...


class ClusterShape(Protocol):
    """What the read cache's size depends on: the cache and the tier it lives on."""

    @property
    def cache(self) -> CacheShape: ...
    @property
    def tier(self) -> TierShape: ...


class DriveShape(Protocol):
    """A spinning drive's datasheet: seeks, rotation, media rate and capacity."""

    @property
    def settle(self) -> float: ...
    @property
    def avg_seek(self) -> float | None: ...
    @property
    def full_seek(self) -> float | None: ...
    @property
    def media_rate(self) -> float: ...
    @property
    def rpm(self) -> float | None: ...
    @property
    def capacity(self) -> int: ...


class ArrayShape(Protocol):
    """An array's drives, their count and layout, and its controller write cache."""

    @property
    def drive(self) -> DriveShape: ...
    @property
    def raid(self) -> str: ...
    @property
    def spindles(self) -> int: ...
    @property
    def controller_cache(self) -> int: ...
    @property
    def cache_latency(self) -> float: ...
