"""Test-suite settings shared by every test module."""

import os

from hypothesis import settings

# On CI the property tests explore a fixed sequence of examples, so a red run can be replayed
# exactly; locally they explore new examples every run (and keep failures in .hypothesis/).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
