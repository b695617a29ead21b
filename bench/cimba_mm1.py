"""The M/M/1 queue of bench_engine.py in Cimba's Python API (Cimba compiles it to native code on
first use).

Imported only when the optional ``cimba`` package is installed (``pip install -e '.[bench]'``). No
``from __future__ import annotations`` here: Cimba reads the class's annotations as objects.
"""

import cimba as cb
from cimba import inputs

RHO = 0.9  # arrival rate; the service rate is 1, as in bench_engine.mm1


class MM1(cb.Model):
    """Exponential gaps of mean 1/RHO into a container, one server taking them out for
    exponential service of mean 1."""

    interarrival: cb.Input[float] = inputs.dist.exponential(mean=1 / RHO)
    service_time: cb.Input[float] = inputs.dist.exponential(mean=1)
    queue: cb.Container
    served: cb.Output[int]
    mean_queue: cb.Output[float]

    @cb.process
    def arrivals(self):  # type: ignore[no-untyped-def]
        while True:
            cb.hold(self.interarrival.next())
            self.queue.put(1)

    @cb.process
    def server(self):  # type: ignore[no-untyped-def]
        while True:
            self.queue.get(1)
            cb.hold(self.service_time.next())
            self.served += 1

    @cb.on_end
    def measure(self):  # type: ignore[no-untyped-def]
        self.mean_queue = self.queue.mean_level()
