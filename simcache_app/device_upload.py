"""Uploaded fio results of the user's own device, fitted into a tier (``simcache calibrate`` on the
page).

The uploads are written under their own names into a folder named by the SHA-256 of them all (beside
the workload uploads), so the fit's messages and the device file's comment block name the files as
the user knows them; the fit is then :func:`simcache.workloads.calibrate.device.calibrate`. Using
the device is one override, ``cluster.tier`` = the fitted table.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simcache.base.errors import WorkloadFileError
from simcache.workloads.calibrate.device import Calibration, calibrate
from simcache.workloads.calibrate.profile import fit_rows
from simcache_app.uploads import UPLOAD_LIMIT_BYTES, upload_folder

__all__ = ["calibrate_uploads", "device_overrides", "fit_frame"]


def _safe_name(name: str) -> str:
    base = Path(name).name
    cleaned = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in base)[:100]
    return cleaned or "result.json"


def calibrate_uploads(files: Sequence[tuple[str, bytes]], base: str | None = None) -> Calibration:
    """The tier fitted to uploaded fio JSON results ``(name, bytes)``; ``base`` as ``--base``.

    Raises :class:`~simcache.base.errors.ScenarioError` naming the uploaded file for anything
    calibrate refuses.
    """
    digest = hashlib.sha256()
    for name, data in files:
        if len(data) > UPLOAD_LIMIT_BYTES:
            raise WorkloadFileError.at(
                name, None, "", f"the file is {len(data):,} bytes; an fio JSON result is a few KiB"
            )
        if not data:
            raise WorkloadFileError.at(name, None, "", "the file is empty")
        digest.update(hashlib.sha256(data).digest() + name.encode())
    folder = upload_folder() / f"calibrate-{digest.hexdigest()[:32]}"
    paths = []
    for name, data in files:
        path = folder / _safe_name(name)
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=".upload-")
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        paths.append(path)
    return calibrate(paths, "tier", base)


def fit_frame(calibration: Calibration) -> pd.DataFrame:
    """Measured against fitted IOPS, mean and p99 per point, with the errors (in %), one row a
    point."""
    records = []
    for row in fit_rows(calibration.fit):
        iops, mean, p99 = row.errors()
        records.append(
            {
                "pattern": row.pattern,
                "QD": row.outstanding,
                "IOPS": round(row.iops),
                "fitted IOPS": round(row.fitted_iops),
                "IOPS err %": round(100 * iops, 1),
                "mean ms": round(row.mean_ms, 4),
                "fitted mean ms": round(row.fitted_mean_ms, 4),
                "mean err %": round(100 * mean, 1),
                "p99 ms": None if row.p99_ms is None else round(row.p99_ms, 4),
                "fitted p99 ms": round(row.fitted_p99_ms, 4),
                "p99 err %": None if p99 is None else round(100 * p99, 1),
                "file": row.source,
            }
        )
    return pd.DataFrame.from_records(records)


def device_overrides(calibration: Calibration) -> dict[str, Any]:
    """The override that puts the fitted device on every host: ``cluster.tier`` = its table."""
    return {"cluster.tier": calibration.table()}
