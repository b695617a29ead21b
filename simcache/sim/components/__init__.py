"""SimPy model components, one per file: tier, link, array, cache, destager, host, vm.

Their helpers: meter (busy intervals), randomness (block-drawn uniforms), detached (generators
without a process) and kernel (the only module that touches SimPy's internals)."""
