"""Files users bring, made workloads: a file read into a scenario's groups (imported), a trace's
statistics, the fit of a synthetic workload to a trace, and the two compared. Not part of the
compiled engine (nothing here runs per I/O)."""
