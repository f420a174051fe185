"""Device memory of the emulated GPU, as CUDA's caching allocator reports it.

Every storage that becomes emulated is counted while it lives (a storage's Python object lives as
long as its data, so a finalizer on it says when the memory is freed). Sizes are what the caching
allocator hands out: at least 512 bytes, rounded up to a multiple of 512. Requests of at most
1 MiB come from 2 MiB segments (the small pool); larger ones from 20 MiB segments below 10 MiB,
else a segment of the size rounded up to 2 MiB (the large pool). Reserved memory is modelled as
the segments those pools need, kept until ``empty_cache`` (which releases what no allocation
uses); the allocator's block splitting and fragmentation are not modelled, so ``memory_reserved``
is an estimate that is never below ``memory_allocated``, as on a GPU.

The statistics are what ``torch.cuda.memory_stats`` and ``torch.accelerator.memory_stats`` report
(``allocated_bytes.all.current``, ``.peak``, ``reserved_bytes...``, ``active_bytes...``,
``allocation...``, ``segment...``), so torch's own counters and a program's reading of the keys agree.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import torch

MINIMUM_BLOCK = 512
SMALL_REQUEST = 1024 * 1024
SMALL_SEGMENT = 2 * 1024 * 1024
LARGE_SEGMENT = 20 * 1024 * 1024
LARGE_ROUND_FROM = 10 * 1024 * 1024
LARGE_ROUND = 2 * 1024 * 1024
POOLS = ("small_pool", "large_pool")
KINDS = ("all", *POOLS)
METRICS = ("current", "peak", "allocated", "freed")
STATS = ("allocation", "allocated_bytes", "active", "active_bytes", "requested_bytes", "segment", "reserved_bytes")


def block_size(nbytes: int) -> int:
    if nbytes < MINIMUM_BLOCK:
        return MINIMUM_BLOCK
    return MINIMUM_BLOCK * -(-nbytes // MINIMUM_BLOCK)


def segment_size(block: int) -> int:
    if block <= SMALL_REQUEST:
        return SMALL_SEGMENT
    if block < LARGE_ROUND_FROM:
        return LARGE_SEGMENT
    return LARGE_ROUND * -(-block // LARGE_ROUND)


class _Counter:
    """current / peak / allocated / freed, as the allocator's Stat."""

    def __init__(self) -> None:
        self.current = self.peak = self.allocated = self.freed = 0

    def add(self, amount: int) -> None:
        self.current += amount
        self.allocated += amount
        self.peak = max(self.peak, self.current)

    def sub(self, amount: int) -> None:
        self.current -= amount
        self.freed += amount

    def as_dict(self) -> dict[str, int]:
        return {metric: getattr(self, metric) for metric in METRICS}


class Memory:
    """The emulated device's allocations; thread-safe (DataLoader threads move batches)."""

    def __init__(self) -> None:
        # Reentrant: a finalizer (freeing a storage) may run inside track() when it triggers a collection.
        self._lock = threading.RLock()
        self._live: dict[int, tuple[str, int, int]] = {}
        self._stats = {(stat, kind): _Counter() for stat in STATS for kind in KINDS}
        # Bytes of reserved segments no allocation uses, per pool.
        self._spare = dict.fromkeys(POOLS, 0)
        self._events = {"num_alloc_retries": 0, "num_ooms": 0, "num_sync_all_streams": 0, "num_device_alloc": 0}
        self._events["num_device_free"] = 0

    def track(self, tensor: torch.Tensor) -> None:
        """Count ``tensor``'s storage (called with true devices, for a tensor just made emulated)."""
        try:
            storage = tensor.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return  # sparse and other storage-less layouts
        key, nbytes = storage._cdata, storage.nbytes()
        if nbytes == 0:
            return
        with self._lock:
            if key in self._live:
                return
            block = block_size(nbytes)
            pool = "small_pool" if block <= SMALL_REQUEST else "large_pool"
            self._live[key] = (pool, block, nbytes)
            if self._spare[pool] < block:
                segment = segment_size(block)
                self._spare[pool] += segment
                self._count(("segment", "reserved_bytes"), pool, (1, segment), add=True)
                self._events["num_device_alloc"] += 1
            self._spare[pool] -= block
            self._count(("allocation", "allocated_bytes", "active", "active_bytes"), pool, (1, block, 1, block), True)
            self._count(("requested_bytes",), pool, (nbytes,), True)
        weakref.finalize(storage, self._free, key)

    def _free(self, key: int) -> None:
        with self._lock:
            found = self._live.pop(key, None)
            if found is None:
                return
            pool, block, nbytes = found
            self._spare[pool] += block
            self._count(("allocation", "allocated_bytes", "active", "active_bytes"), pool, (1, block, 1, block), False)
            self._count(("requested_bytes",), pool, (nbytes,), False)

    def _count(self, stats: tuple[str, ...], pool: str, amounts: tuple[int, ...], add: bool) -> None:
        for stat, amount in zip(stats, amounts):
            for kind in (pool, "all"):
                counter = self._stats[(stat, kind)]
                counter.add(amount) if add else counter.sub(amount)

    def empty_cache(self) -> None:
        """Release the segments no allocation uses (whole segments only, as the allocator does)."""
        with self._lock:
            for pool in POOLS:
                used = self._stats[("allocated_bytes", pool)].current
                reserved = self._stats[("reserved_bytes", pool)].current
                blocks = [block for kind, block, _ in self._live.values() if kind == pool]
                if pool == "small_pool":
                    kept = -(-used // SMALL_SEGMENT)
                    needed = kept * SMALL_SEGMENT
                else:
                    kept, needed = len(blocks), sum(segment_size(block) for block in blocks)
                released = max(0, reserved - needed)
                if released:
                    count = max(0, self._stats[("segment", pool)].current - kept)
                    self._count(("segment", "reserved_bytes"), pool, (count, released), add=False)
                    self._events["num_device_free"] += count
                    self._spare[pool] -= released

    def reset_peak(self) -> None:
        with self._lock:
            for counter in self._stats.values():
                counter.peak = counter.current

    def reset_accumulated(self) -> None:
        with self._lock:
            for counter in self._stats.values():
                counter.allocated = counter.freed = 0
            self._events = dict.fromkeys(self._events, 0)

    def nested(self) -> dict[str, Any]:
        """``torch._C._accelerator_getDeviceStats``'s form: ``{stat: {pool: {metric: n}}}``."""
        with self._lock:
            stats: dict[str, Any] = {}
            for stat in STATS:
                stats[stat] = {kind: self._stats[(stat, kind)].as_dict() for kind in KINDS}
            stats.update(self._events)
            stats["max_split_size"] = -1
            return stats

    def flat(self) -> dict[str, Any]:
        """``torch.cuda.memory_stats``'s form: dotted keys, sorted."""
        found: list[tuple[str, Any]] = []

        def flatten(prefix: str, value: Any) -> None:
            if isinstance(value, dict):
                for key, inner in value.items():
                    flatten(f"{prefix}.{key}" if prefix else key, inner)
            else:
                found.append((prefix, value))

        flatten("", self.nested())
        return dict(sorted(found))

    def get(self, key: str) -> int:
        return int(self.flat().get(key, 0))
