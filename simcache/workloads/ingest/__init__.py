"""Files users bring, made workloads: a file read into a scenario's groups (imported), a trace's
statistics, and the fit of a synthetic workload to a trace. Not part of the compiled engine
(nothing here runs per I/O)."""
