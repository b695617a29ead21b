"""Many runs of a scenario and what is decided from them: sweeps and their store, scenario
checks, targets."""
