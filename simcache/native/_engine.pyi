"""Types of the optional Cython extension `simcache/native/_engine.pyx` (the native engine)."""

from typing import Any

class Engine:
    eid: int
    now: float
    events: int
    hits: int
    def __init__(
        self,
        tiers: list[Any],
        caches: list[Any],
        vms: list[Any],
        streams: list[Any],
        vm_tiers: list[int],
        reach: list[int],
        slot_vms: list[int],
        record_buffer: Any,
        path_hit: int,
        refills: list[int],
        max_batch: int,
        trace_rows: int,
    ) -> None: ...
    def use_misses(
        self,
        full: list[bool],
        array: Any,
        network: Any,
        hosts: list[Any],
        path_miss: float,
        ports: list[Any],
    ) -> None: ...
    def storage_back(self, host: int, clock: Any) -> None: ...
    def peers_back(self, vm: int, clock: Any) -> None: ...
    def use_destagers(self, hosts: list[Any]) -> None: ...
    def add_vmotion(
        self,
        clock: Any,
        record: dict[str, Any],
        paths: list[list[Any]],
        wire: float,
        packets: int,
        latency: float,
        weight: float,
        at: float,
    ) -> None: ...
    def use_vmotions(self, vmotions: list[dict[str, Any]]) -> None: ...
    def use_writes(
        self, write_through: list[bool], gc_factors: list[float], path_write: int
    ) -> None: ...
    def begin(self, clock: Any) -> None: ...
    def use_blocks(self, blocks: Any) -> None: ...
    def sync_in(self, sample: bool = False) -> None: ...
    def set_capacity(self, port: Any, capacity: float, clock: Any) -> None: ...
    def sync_out(self, full: bool = True, sample: bool = False, at: float = 0.0) -> None: ...
    def run(self, head_time: float, head_key: int, budget: int = -1) -> bool: ...
    def precedes(self, time: float, key: int) -> bool: ...
    def queued(self) -> int: ...
    def state_bytes(self) -> dict[str, int]: ...
