"""The laws of the devices, links and array in numbers, computed once for both the simulator and
the estimate."""
