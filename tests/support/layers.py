"""The package's layers, bottom to top (docs/architecture.md): checked by
tests/project/test_layers.py, listed by docs/modules.md.

Standard library only: ``tests/support/module_index.py`` reads it when run as a script.
"""

from __future__ import annotations

# Bottom to top. A module belongs to the first layer whose package prefix it has.
LAYERS = (
    # build infrastructure: which modules run compiled (standard library only)
    ("native", "simcache.native"),
    ("base", "simcache.base"),  # errors, units, files, metrics, names, JSON values, version
    # the devices' and array's laws, in numbers and the fields they read
    ("physics", "simcache.physics"),
    # files users bring, parsed: the trace store and one module per format
    ("traces", "simcache.traces"),
    ("spec", "simcache.spec"),  # the scenario schema and the built-in profiles
    # I/O generators, replay, trace statistics and fits, imports
    ("workloads", "simcache.workloads"),
    ("estimate", "simcache.estimate"),  # the analytic estimate
    ("sim", "simcache.sim"),  # the engine: kernel, components, drivers, records
    ("results", "simcache.results"),  # a run's tables, validity, event impact
    ("runs", "simcache.runs"),  # sweeps, stores, checks, targets
    ("report", "simcache.report"),  # the HTML report and the run's printed tables
    ("cli", "simcache.cli"),  # the command line
    ("api", "simcache"),  # the package root (the public API) and ``python -m simcache``
    ("app", "simcache_app"),  # the Streamlit page's modules
)


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the layer a module (dotted name) belongs to."""
    for index, (_, prefix) in enumerate(LAYERS):
        if module == prefix or module.startswith(prefix + "."):
            return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")
