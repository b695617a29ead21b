"""Where the tests find the checkout's files, said once for every test folder."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent  # tests/ (golden.py, the support package)
ROOT = TESTS.parent  # the checkout: scenarios/, examples/, app.py, notebooks/
DATA = TESTS / "data"  # the tests' own input files
