"""The record blocks keep each field in the narrowest type that holds its values exactly (issue
35: at most 48 bytes of records per I/O), widening a field when a value needs it, without
changing a value already held."""

from __future__ import annotations

import numpy as np

from simcache.sim import collect


def _record(vm: int, size: int, completed: float) -> collect.Record:
    return (vm, False, size, completed - 0.5, completed, 0.1, 0.2, 0.0, 0.0, 0.2, collect.PATH_HIT)


def test_a_run_of_few_vms_and_sector_sizes_takes_40_bytes_a_record() -> None:
    blocks = collect.RecordBlocks()
    blocks.drain([_record(vm, 4096 * (1 + vm), 1.0 + vm) for vm in range(8)])
    assert blocks.bytes_per_io == collect.BLOCK_BYTES_PER_IO_NARROW == 40
    assert blocks.nbytes == 8 * 40
    sizes = blocks.take(collect.SIZE)
    assert sizes.dtype == np.uint32  # the table's type, whatever the blocks kept
    assert sizes.tolist() == [4096 * (1 + vm) for vm in range(8)]


def test_fields_widen_when_a_value_needs_it_and_keep_every_value() -> None:
    blocks = collect.RecordBlocks()
    blocks.drain([_record(3, 512 * 65535, 1.0)])  # the largest size two bytes of sectors hold
    assert blocks.bytes_per_io == 40
    blocks.drain([_record(300, 4096, 2.0)])  # a VM index past one byte
    assert blocks.bytes_per_io == 41
    # not whole sectors: the size field holds bytes from now on
    blocks.drain([_record(7, 4097, 3.0)])
    assert blocks.bytes_per_io == 43
    blocks.drain([_record(70_000, 2**32, 4.0)])  # past two bytes of VMs and past uint32 bytes
    assert blocks.bytes_per_io == 4 + 1 + 8 + 36
    assert blocks.take(collect.VM).tolist() == [3, 300, 7, 70_000]
    sizes = blocks.take(collect.SIZE)
    assert sizes.dtype == np.int64
    assert sizes.tolist() == [512 * 65535, 4096, 4097, 2**32]
    assert blocks.take(collect.COMPLETED).tolist() == [1.0, 2.0, 3.0, 4.0]


def test_a_size_past_two_bytes_of_sectors_is_kept_in_bytes() -> None:
    blocks = collect.RecordBlocks()
    # 32 MiB: whole sectors, but 65,536 of them
    blocks.drain([_record(0, 4096, 1.0), _record(1, 512 * 65536, 2.0)])
    assert blocks.bytes_per_io == 1 + 1 + 4 + 36
    sizes = blocks.take(collect.SIZE)
    assert sizes.dtype == np.uint32
    assert sizes.tolist() == [4096, 512 * 65536]
