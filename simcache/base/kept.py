"""Answers kept for the keys asked last: a bounded store, least recently used leaving first, safe
to share between threads (the app's sessions run their scripts in threads of their own)."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class Kept(Generic[T]):
    """At most ``most`` values by key; :meth:`get` makes its key the most recently used, :meth:`put`
    evicts the least recently used ones past ``most``. Two threads asking for a missing key at once
    may both compute it; the last :meth:`put` stays."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._values: dict[Hashable, T] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> T | None:
        """The value kept for ``key`` (now the most recently used), or None."""
        with self._lock:
            value = self._values.pop(key, None)
            if value is not None:
                self._values[key] = value
            return value

    def put(self, key: Hashable, value: T) -> None:
        with self._lock:
            self._values.pop(key, None)
            while len(self._values) >= self.most:
                self._values.pop(next(iter(self._values)))
            self._values[key] = value

    def __len__(self) -> int:
        return len(self._values)

    def values(self) -> list[T]:
        """The kept values, least recently used first."""
        with self._lock:
            return list(self._values.values())
