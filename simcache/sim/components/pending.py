"""What a destager holds and hands on: a pending write (:data:`PendingWrite`) and the same write
once a replica holder has died (:func:`without`) or part of it is on the array (:func:`undestaged`);
where a block sits in a hash-indexed cache's walk (:func:`block_hash`, :data:`Block`); and a batch a
flusher took (:class:`FlushBatch`, cut into array requests by :func:`pieces`).

Values and pure functions, shared by the destager (:mod:`simcache.sim.components.destager`), its
flushers (:mod:`simcache.sim.components.flusher`), the hosts, the VMs and the failure events that
hand writes over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from simcache.sim.components.array import Run
    from simcache.sim.components.host import Host

__all__ = [
    "BLOCK_HASH",
    "BLOCK_NUMBER",
    "BLOCK_OFFSET",
    "BLOCK_SIZE",
    "BLOCK_TICK",
    "BLOCK_VM",
    "WRITE_HOLDERS",
    "WRITE_OFFSET",
    "WRITE_SINGLE",
    "WRITE_SIZE",
    "WRITE_VM",
    "Block",
    "FlushBatch",
    "PendingWrite",
    "block_hash",
    "pieces",
    "undestaged",
    "without",
]

# (vm id, offset, size, hosts holding replicas, single copy?)
PendingWrite = tuple[int, int, int, tuple["Host", ...], bool]
# Where each field of a PendingWrite sits (a tuple: the destager holds millions; named fields would
# cost an object each).
WRITE_VM: Final = 0
WRITE_OFFSET: Final = 1
WRITE_SIZE: Final = 2
WRITE_HOLDERS: Final = 3
WRITE_SINGLE: Final = 4


def without(item: PendingWrite, dead: Host) -> PendingWrite:
    """``item`` with ``dead`` no longer among the hosts holding its replicas (a single copy if
    none is left)."""
    kept = tuple(h for h in item[WRITE_HOLDERS] if h is not dead)
    return (item[WRITE_VM], item[WRITE_OFFSET], item[WRITE_SIZE], kept, not kept)


def undestaged(entry: list[Any]) -> PendingWrite:
    """A hash-walk write's entry ``[write, bytes not yet on the array]`` as the write of those bytes
    alone.

    Its blocks are destaged one by one, so a write spanning several can be partly on the array when
    its host dies: the part already there is neither lost nor handed over, and the replica holders
    drop their copy of it. The bytes left are counted exactly; they are placed at the write's tail
    (which blocks they are is not kept)."""
    item: PendingWrite = entry[0]
    left: int = entry[1]
    done = item[WRITE_SIZE] - left
    if not done:
        return item
    for holder in item[WRITE_HOLDERS]:
        holder.replica_bytes -= done
    return (
        item[WRITE_VM],
        item[WRITE_OFFSET] + done,
        left,
        item[WRITE_HOLDERS],
        item[WRITE_SINGLE],
    )


_MASK64: Final = (1 << 64) - 1


def block_hash(vm: int, block: int) -> int:
    """Where block ``block`` of VM ``vm``'s disk sits in a hash-indexed cache's walk (``order =
    "hash"``): splitmix64's finalizer of the pair, a fixed order unrelated to the block's
    address."""
    x = ((vm + 1) * 0x9E3779B97F4A7C15 + block) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


# A dirty block in the hash walk: (hash, arrival tick, write's number, vm id, offset, size).
Block = tuple[int, int, int, int, int, int]
BLOCK_HASH: Final = 0
BLOCK_TICK: Final = 1
BLOCK_NUMBER: Final = 2
BLOCK_VM: Final = 3
BLOCK_OFFSET: Final = 4
BLOCK_SIZE: Final = 5


def pieces(run: Run, limit: int) -> list[Run]:
    """A run cut into array requests of at most ``limit`` bytes (a single write larger than
    ``max_batch``), in order."""
    vm, offset, length = run
    return [(vm, offset + start, min(limit, length - start)) for start in range(0, length, limit)]


class FlushBatch:
    """A batch a flusher took: its writes (``items``), their hash-walk owners (``order =
    "hash"``), their bytes, and the runs they coalesce to, of ``unique_bytes`` (overwrites within
    the batch are read and sent once)."""

    __slots__ = ("items", "nbytes", "owners", "runs", "unique_bytes")

    def __init__(
        self, items: list[PendingWrite], owners: list[tuple[int, int]], nbytes: int, runs: list[Run]
    ):
        self.items = items
        self.owners = owners
        self.nbytes = nbytes
        self.runs = runs
        unique_bytes = 0
        for run in runs:
            unique_bytes += run[2]
        self.unique_bytes = unique_bytes
