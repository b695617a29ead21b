"""A scenario's parts in words for people, saying which of a profile's fields are set otherwise:
``"roce-100GbE at 25 Gbit/s"``, ``"10GbE (latency changed)"``. Shared by the results' sentences
(:mod:`simcache.results.bottleneck`) and the app's summary of a scenario, so both name a part
alike.
"""

from __future__ import annotations

from simcache.base.units import format_figure
from simcache.spec import ArraySpec, DriveSpec, LinkSpec, TierSpec

__all__ = ["changed_fields", "drive_noun", "line_rate", "link_words"]


def link_words(link: LinkSpec) -> str:
    """A link in words: its profile (``"1GbE"``), a changed line rate as a figure
    (``"roce-100GbE at 25 Gbit/s"``), other changed fields by name (``"10GbE (latency
    changed)"``); a link of no profile by its line rate."""
    if not link.profile:
        return line_rate(link.bandwidth)
    words = link.profile
    if link.bandwidth != LinkSpec.model_validate(link.profile).bandwidth:
        words += f" at {line_rate(link.bandwidth)}"
    changed = changed_fields(link, shown=("bandwidth",))
    return f"{words} ({changed})" if changed else words


def drive_noun(drive: DriveSpec) -> str:
    """One drive of an array in words: ``"spindle"`` for a spinning one, ``"flash drive"`` for a
    solid-state one, as the app's summary of an array names them (review 67a F12: an all-flash
    array's drives were called spindles)."""
    return "flash drive" if drive.media == "flash" else "spindle"


def changed_fields(
    spec: TierSpec | DriveSpec | ArraySpec | LinkSpec, shown: tuple[str, ...] = ()
) -> str:
    """``"latency, mtu changed"``: the fields of ``spec`` that differ from the profile it names,
    apart from its words and those ``shown`` elsewhere, past three the rest counted; empty when
    none does or ``spec`` names no profile."""
    if not spec.profile:
        return ""
    reference = type(spec).model_validate(spec.profile)
    names = [
        name
        for name in type(spec).model_fields
        if name not in ("profile", "description", "source", *shown)
        and getattr(spec, name) != getattr(reference, name)
    ]
    if not names:
        return ""
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return f"{', '.join(names[:3])}{more} changed"


def line_rate(bytes_per_s: float) -> str:
    """A link's line rate in bits, as links are named: ``3.125e9`` -> ``"25 Gbit/s"``,
    ``1.25e7`` -> ``"100 Mbit/s"``."""
    bits = 8 * bytes_per_s
    if bits >= 1e9:
        return f"{format_figure(bits / 1e9, 3)} Gbit/s"
    return f"{format_figure(bits / 1e6, 3)} Mbit/s"
