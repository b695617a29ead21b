"""SimPy model components, one per file: tier, link, array, cache, destager, host, vm."""
