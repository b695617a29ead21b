"""The command line: ``simcache`` and its subcommands."""
