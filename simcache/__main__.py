"""``python -m simcache``: the same command line as ``simcache`` (:func:`simcache.cli.main`)."""

import sys

from simcache.cli import main

sys.exit(main())
