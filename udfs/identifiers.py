"""Spark SQL identifiers written into statement text (the Python side of the macro
``cdc_quote_identifier``)."""

from __future__ import annotations


def quote_identifier(name: str) -> str:
    """``name`` backquoted, a backquote inside doubled: any column, view or table name
    (unicode, spaces, dots, backquotes) is read back as exactly that name."""
    return "`" + name.replace("`", "``") + "`"
