"""A :class:`Signal`: an entry of the clock's event queue, and what the engine's own waits are.

A signal is what the engine schedules instead of a ``simpy.Event``: its own
wake-ups and deliveries (:mod:`simcache.sim.kernel.waits`), and the stand-in of
each SimPy event the clock queues (:mod:`simcache.sim.kernel.clock`). This
module holds the signal itself and what processing one does: resume the
generator waiting for it first (a :class:`simcache.sim.kernel.clock.Resumer`),
then its callbacks (:func:`run_signal`, :func:`process_now`, :func:`on_processed`).

A signal's underscored fields (``_callbacks``, and ``_ok`` and ``_value``, named as
SimPy's event fields so that a generator reads either the same way) are the kernel
package's: its modules read them, and the components read a signal's ``_value`` where
they wait for one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import simpy

if TYPE_CHECKING:  # mypyc compiles i64 as a C int64 (no tagged-int checks); to Python it is int
    from mypy_extensions import i64

    from simcache.sim.kernel.clock import Resumer

__all__ = [
    "NONE_ADDED",
    "NOT_SCHEDULED",
    "Signal",
    "Wait",
    "on_processed",
    "process_now",
    "run_signal",
]

NOT_SCHEDULED: Final = -1  # the key of a Signal not scheduled yet


class Signal:
    """An entry of a :class:`~simcache.sim.kernel.clock.Clock`'s queue: the engine's own wake-ups
    and deliveries, cheaper than a ``simpy.Event``, and the stand-in of each SimPy event queued.

    Entries run by ``time`` (seconds), then by ``key``, which folds SimPy's
    (priority, event id) into one integer: two entries compare with two native
    comparisons instead of a tuple's. One class for every entry (no
    subclasses), so that compiled, reading one from the heap checks its type
    with one comparison (with subclasses, each read called ``PyType_IsSubtype``:
    3.7% of a run's instructions).

    ``event``: the SimPy event the entry stands for
    (:func:`simcache.sim.kernel.clock._scheduled`), or None for the engine's own
    signal. An engine signal has what SimPy's loop and a waiting generator use
    (``callbacks``, ``_ok``, ``_value``), no environment and no checks; it is its
    own queue entry, so it is scheduled at most once. ``callback`` is called with
    the signal. ``resumer``: the first to wait for it, if a
    :class:`~simcache.sim.kernel.clock.Resumer` (resumed by a native call, ahead
    of the callbacks added after it).

    Most signals have one callback or one waiter, so neither needs a list:
    ``callback`` (the first) and ``resumer`` are fields, and ``_callbacks``
    (the ones added after them) is the shared empty :data:`NONE_ADDED` until
    one is added (None once processed). The ``callbacks`` property is SimPy's
    list of them all, in order, made when asked for.
    """

    __slots__ = ("_callbacks", "_ok", "_value", "callback", "event", "key", "resumer", "time")

    def __init__(self, value: Any, callback: Callable[[Signal], None] | None = None):
        self.time = 0.0
        self.key: i64 = NOT_SCHEDULED
        self._ok = True
        self._value: Any = value
        self.callback = callback
        self._callbacks: list[Callable[[Signal], None]] | None = NONE_ADDED
        self.resumer: Resumer | None = None
        self.event: Any = None

    @property
    def callbacks(self) -> list[Callable[[Signal], None]] | None:
        """SimPy's ``callbacks``: what to call when it is processed, in order (a list that may be
        added to); None once processed. A waiting
        :class:`~simcache.sim.kernel.clock.Resumer` comes first, as its
        ``resume``."""
        callbacks = self._callbacks
        if callbacks is None:
            return None
        if callbacks is NONE_ADDED or self.callback is not None or self.resumer is not None:
            callbacks = _in_order(self)
            self.callback = None
            self.resumer = None
            self._callbacks = callbacks
        return callbacks

    @callbacks.setter
    def callbacks(self, callbacks: list[Callable[[Signal], None]] | None) -> None:
        self.callback = None
        self.resumer = None
        self._callbacks = callbacks

    def add_callback(self, callback: Callable[[Signal], None]) -> None:
        """Call ``callback`` with the signal when it is processed, after those added before (not
        processed yet)."""
        callbacks = self._callbacks
        assert callbacks is not None, "a processed Signal takes no callback"
        if callbacks is NONE_ADDED:
            self._callbacks = [callback]
        else:
            callbacks.append(callback)

    @property
    def value(self) -> Any:
        """What the signal carries (given when it was made)."""
        return self._value

    @property
    def triggered(self) -> bool:
        """SimPy's ``triggered``: queued to be processed, or processed already."""
        return self.key != NOT_SCHEDULED or self._callbacks is None


NONE_ADDED: Final[list[Callable[[Signal], None]]] = []
"""A :class:`Signal`'s ``_callbacks`` while none was added after its first callback or waiter
(shared: never added to)."""


def _in_order(signal: Signal) -> list[Callable[[Signal], None]]:
    """Everything ``signal`` calls when processed, in order: its resumer's ``resume``, its
    callback, those added after."""
    callbacks: list[Callable[[Signal], None]] = []
    if signal.resumer is not None:
        callbacks.append(signal.resumer.resume)
    if signal.callback is not None:
        callbacks.append(signal.callback)
    added = signal._callbacks
    if added is not None and added is not NONE_ADDED:
        callbacks.extend(added)
    return callbacks


# explicit: without simpy's types (mypyc's build) simpy.Event is Any
Wait: TypeAlias = simpy.Event | Signal
"""What the engine's detached generators yield: a SimPy event or a :class:`Signal`
(:func:`~simcache.sim.kernel.waits.sleep`)."""


def process_now(event: Any) -> None:
    """Process ``event`` now, as SimPy's loop does when it pops it: call its callbacks once, mark
    it processed."""
    if isinstance(event, Signal):
        run_signal(event)
        return
    callbacks, event.callbacks = event.callbacks, None
    for callback in callbacks:
        callback(event)


def run_signal(signal: Signal) -> None:
    """Process ``signal``: resume the generator waiting for it first, then call its callback and
    those added after; mark it processed."""
    added = signal._callbacks
    assert added is not None, "a Signal processed twice"
    signal._callbacks = None
    resumer = signal.resumer
    if resumer is not None:
        signal.resumer = None
        resumer.resume(signal)
    callback = signal.callback
    if callback is not None:
        signal.callback = None
        callback(signal)
    if added is not NONE_ADDED:
        for callback in added:
            callback(signal)


def on_processed(signal: Signal, callback: Callable[[Signal], None]) -> None:
    """Call ``callback`` when ``signal`` (not processed yet) is processed, where a
    :class:`~simcache.sim.kernel.clock.Resumer` waiting for it would be resumed: first if nothing
    waits for it yet, else after those that do."""
    assert signal._callbacks is not None, "a Signal processed already"
    if signal.resumer is None and signal.callback is None and signal._callbacks is NONE_ADDED:
        signal.callback = callback
    else:
        signal.add_callback(callback)
