"""The one exception the workbench raises for bad input.

Pages show its message in one line; the ``eqi`` command prints it and exits with status 2.
"""
from __future__ import annotations


class DataError(ValueError):
    """Bad input: the message names the file, the line or field, and what was expected."""


class MissingDependency(RuntimeError):
    """An optional Python package or system program a feature needs is not installed."""

    @classmethod
    def from_import(cls, exc: ModuleNotFoundError, feature: str = "") -> MissingDependency:
        name = exc.name or str(exc)
        what = f" ({feature})" if feature else ""
        return cls(f"the Python package {name!r} is not installed{what}; run `make setup` "
                   f"(or `pip install -e .[test,irds]`) in the project's virtual environment")


class FigureExportError(RuntimeError):
    """A static image could not be rendered (kaleido or its browser failed)."""
