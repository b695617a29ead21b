"""What the VMs ask of the cluster: the synthetic I/O generators and trace replay the engine runs
(compiled with it), and, in :mod:`simcache.workloads.ingest`, files users bring made workloads."""
