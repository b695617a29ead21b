"""``simcache calibrate`` (a device fitted to fio results) and ``simcache profiles`` (the
built-in profiles and their sources)."""

from __future__ import annotations

import argparse
import sys

from simcache.cli.outputs import output_file
from simcache.spec.profiles import KINDS, field_notes, list_profiles
from simcache.workloads.calibrate.device import calibrate
from simcache.workloads.calibrate.profile import fit_table

__all__ = ["run_calibrate", "run_profiles"]


def run_calibrate(args: argparse.Namespace) -> int:
    """Fit the device, print measured against fitted per point and the warnings, write (or print)
    its TOML. An ``-o`` path that cannot be written is refused before the files are read."""
    if args.out is not None:
        output_file(args.out, "-o")
    calibration = calibrate(args.files, args.kind, args.base, args.rpm)
    fit, out = calibration.fit, sys.stderr if args.out is None else sys.stdout
    print(
        f"{len(fit.points)} points of {calibration.points.device}; fields fio cannot measure from "
        f"{calibration.base}",
        file=out,
    )
    for line in fit_table(fit):
        print(f"  {line}", file=out)
    for warning in (*fit.warnings, *calibration.points.notes):
        print(f"warning: {warning}", file=out)
    for line in calibration.inherited:
        print(line, file=out)
    if args.out is None:
        print(calibration.toml, end="")
        return 0
    args.out.write_text(calibration.toml, encoding="utf-8")
    where = "[array] drive" if calibration.kind == "drive" else "[cluster] tier"
    print(f'wrote {args.out}; use it in a scenario: {where} = {{ file = "{args.out.name}" }}')
    return 0


def _is_figure(value: object) -> bool:
    """A profile value that is a number needing a source: a number, or a string that starts with
    one ("20us")."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) or (isinstance(value, str) and value[:1].isdigit())


def run_profiles(args: argparse.Namespace) -> int:
    """Each built-in profile with every field, the source comment beside it in the TOML file, and
    its source line; a number without a comment says so (tests/spec/test_catalogue.py keeps the
    built-in profiles free of that). ``args.kind``: one kind, or one profile's name (shown in
    every kind that has it: a drive and a tier may share a name)."""
    wanted = args.kind
    kinds = list(KINDS)
    only: str | None = None
    if wanted is not None and wanted not in KINDS:
        kinds = [kind for kind in KINDS if wanted in list_profiles(kind)]
        if not kinds:
            names = sorted({name for kind in KINDS for name in list_profiles(kind)})
            close = [n for n in names if n.casefold() == wanted.casefold()]
            hint = f"; did you mean {close[0]!r}?" if close else ""
            print(
                f"simcache profiles: {wanted!r} is neither a kind ({', '.join(KINDS)}) nor a "
                f"built-in profile{hint} (`simcache profiles` lists them all)",
                file=sys.stderr,
            )
            return 2
        only = wanted
    elif wanted is not None:
        kinds = [wanted]
    for kind in kinds:
        print(f"{kind} profiles:")
        notes = field_notes(kind)
        for name, fields in list_profiles(kind).items():
            if only is not None and name != only:
                continue
            print(f"  {name}: {fields.get('description', '')}")
            values = {k: v for k, v in fields.items() if k not in ("description", "source")}
            width = max((len(f"{k} = {v}") for k, v in values.items()), default=0)
            for field, value in values.items():
                note = notes.get(name, {}).get(field, "") or (
                    "(no source given)" if _is_figure(value) else ""
                )
                print(f"      {f'{field} = {value}':<{width}}  {note}".rstrip())
            print(f"      source: {fields.get('source', 'not given')}")
        print()
    return 0
