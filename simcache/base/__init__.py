"""What every layer shares: errors for bad input, units, safe file reading, metric and scenario
names, JSON values, version."""
