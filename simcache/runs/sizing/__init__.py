"""The parts of ``simcache size`` (:mod:`simcache.runs.size`): prices and costs
(:mod:`~simcache.runs.sizing.costs`), the configurations and their monotone dimensions
(:mod:`~simcache.runs.sizing.space`), and the answer (:mod:`~simcache.runs.sizing.answer`)."""
