"""The installed package's version, as every result, manifest and store records it."""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("simcache")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+source"
