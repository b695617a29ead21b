"""simcache: discrete-event simulation of host-side write-back caching.

Public API (what the CLI, the app, notebooks and tests run scenarios with):

- :func:`load_scenario` - read and validate a scenario (TOML path, built-in name or dict)
- :class:`Scenario` - the validated, frozen description; derive runs with ``with_overrides``,
  ``with_duration``, ``with_seed`` and ``variant``
- :func:`simulate` - run a scenario once and get a :class:`Result`
- :func:`sweep` - run a grid of overrides and seeds, one row per point and seed
- :func:`estimate` - analytic estimate of a scenario (queueing approximations), in milliseconds,
  as an :class:`Estimate`
- :func:`import_workload` - read a fio job or result, vscsiStats histograms or a block trace as
  workloads
- :class:`ScenarioError` - raised for every bad input, naming file, field and fix
- :class:`ScenarioWarning` - warned for a valid scenario that likely does not mean what it says
  (extra peer ports only vMotions use), naming file, field and fix

How the package is put together: ``docs/architecture.md``.
"""

# First: it decides whether the compiled modules load.
from simcache.native import choice as _native  # noqa: F401, I001

from simcache.base.version import __version__

from simcache.runs.simulate import simulate
from simcache.base.errors import ScenarioError
from simcache.estimate import Estimate, estimate
from simcache.results.result import Result
from simcache.spec import Scenario, ScenarioWarning, load_scenario
from simcache.runs.sweep import sweep
from simcache.workloads.ingest.imported import import_workload

__all__ = [
    "Estimate",
    "Result",
    "Scenario",
    "ScenarioError",
    "ScenarioWarning",
    "__version__",
    "estimate",
    "import_workload",
    "load_scenario",
    "simulate",
    "sweep",
]
