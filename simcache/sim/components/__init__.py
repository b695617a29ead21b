"""SimPy model components, one per file: tier, link, array, cache, destager, host, vm.

Their helpers: meter (busy intervals) and randomness (block-drawn uniforms). The event kernel they
run on (its clock, signals and waits) is :mod:`simcache.sim.kernel`."""
