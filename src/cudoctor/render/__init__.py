"""Output formats: `emit(kind, fmt, document)` is what every command prints (the table in formats.py)."""

from cudoctor.render.formats import choices, default, emit, redacts

__all__ = ["choices", "default", "emit", "redacts"]
