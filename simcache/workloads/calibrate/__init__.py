"""Devices as users measure them: fio results of one device fitted into a tier profile (``simcache
calibrate``).

:mod:`.points` reads the results and refuses sets that cannot describe one device, :mod:`.model` is
the tier's closed loop in numbers, :mod:`.fit` fits it, :mod:`.profile` writes the device file,
:mod:`.device` ties them. Not part of the compiled engine (nothing here runs per I/O).
"""
