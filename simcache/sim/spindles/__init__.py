"""The backing array's drives, each on its own: where its head is, its queue, its buffer.

- :mod:`~simcache.sim.spindles.mechanics`: :class:`~simcache.sim.spindles.mechanics.Spindles`,
  what one chunk operation on one spindle (or flash drive) costs and when it finishes.

The array (:mod:`simcache.sim.components.array`) cuts requests into chunk operations and books
each on its spindles here; nothing is re-exported here.
"""
