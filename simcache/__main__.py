"""``python -m simcache``: the same command line as ``simcache``
(:func:`simcache.cli.main.main`)."""

import sys

from simcache.cli.main import main

sys.exit(main())
