"""The engine's event kernel: SimPy's event loop made cheaper, with the same order and event ids.

- :mod:`~simcache.sim.kernel.clock`: the clock and its run loop
  (:func:`~simcache.sim.kernel.clock.run_until`), the :class:`~simcache.sim.kernel.clock.Resumer`
  that drives a generator of waits, and the only module that touches SimPy's internals;
- :mod:`~simcache.sim.kernel.stopping`: a run's stop request, as the run loop polls it between
  events and an event that re-rates many transfers polls it within;
- :mod:`~simcache.sim.kernel.entries`: what a clock has queued, read and pruned from outside its
  run loop;
- :mod:`~simcache.sim.kernel.signals`: a :class:`~simcache.sim.kernel.signals.Signal`, the clock's
  queue entry and the engine's own event, and what processing one does;
- :mod:`~simcache.sim.kernel.heap`: the clock's queue, a 4-ary heap of signals (or, installed with
  ``SIMCACHE_NATIVE=1``, the same order in ``simcache/native/_queue.pyx``);
- :mod:`~simcache.sim.kernel.waits`: SimPy's timeout, ``succeed``, ``AllOf`` and ``timeout |
  event`` as signals;
- :mod:`~simcache.sim.kernel.detached`: generators of waits run without a ``simpy.Process``.

The model components (:mod:`simcache.sim.components`) import their names from these modules
directly (nothing is re-exported here).
"""
