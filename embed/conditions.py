"""Conditions on a column, as a researcher writes them: ``citations >= 10``, ``decision = Accept``,
``update_date >= 2023-01-01``, ``categories contains cs.LG``.

One condition is ``COLUMN OPERATOR VALUE``; the operators are ``=`` (also ``==``), ``!=``, ``<``,
``<=``, ``>``, ``>=`` and ``contains``. Text is compared without regard to case: ``=`` the whole
value, ``contains`` a part of it; a list of text ``contains`` (or ``=``) a member; numbers and dates
compare by value. The reader applies them to records as it reads (``build --where``, :meth:`test`),
the index to its papers' table (``filters.where``, with Arrow).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from paperscope.errors import UserError, shown

OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "contains")
ORDERED = ("<", "<=", ">", ">=")
_PATTERN = re.compile(r"^\s*(.+?)\s*(\s(?:contains|CONTAINS)\s|==|!=|<=|>=|=|<|>)\s*(.*?)\s*$", re.DOTALL)
EXAMPLE = "give one as COLUMN OPERATOR VALUE, such as 'citations >= 10' or 'categories contains cs.LG'"


def _unquoted(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


@dataclass(frozen=True)
class Condition:
    """One condition: the column's name, the operator (one of ``OPERATORS``) and the value as written."""

    column: str
    operator: str
    value: str

    def __str__(self) -> str:
        return f"{self.column} {self.operator} {self.value}"

    def bound(self, kind: str):
        """The value as one of a column of ``kind`` compares with (a float, a date or lower-case
        text); an operator or value the kind cannot take is a UserError naming the condition."""
        if kind in ("text", "list") and self.operator in ORDERED:
            raise UserError(f"'{shown(str(self))}': '{self.operator}' compares numbers and dates; "
                            f"'{shown(self.column)}' holds {'lists of text' if kind == 'list' else 'text'}: "
                            "use = or contains")  # fmt: skip
        if kind == "number":
            if self.operator == "contains":
                raise UserError(f"'{shown(str(self))}': '{shown(self.column)}' holds numbers: use =, <, >, <= or >=")
            try:
                return float(self.value)
            except ValueError:
                raise UserError(f"'{shown(str(self))}': '{shown(self.value)}' is not a number") from None
        if kind == "date":
            if self.operator == "contains":
                raise UserError(f"'{shown(str(self))}': '{shown(self.column)}' holds dates: use =, <, >, <= or >=")
            try:
                return datetime.date.fromisoformat(self.value)
            except ValueError:
                raise UserError(f"'{shown(str(self))}': '{shown(self.value)}' is not a date (YYYY-MM-DD)") from None
        return self.value.lower()

    def test(self, value, kind: str, bound=None) -> bool:
        """Whether one record's ``value`` (as ``columns.convert`` makes it for ``kind``; None when
        empty) passes; ``bound``: :meth:`bound` computed once. An empty value passes only ``!=``."""
        if bound is None:
            bound = self.bound(kind)
        if value is None:
            return self.operator == "!="
        if kind == "list":
            found = any(bound == item.lower() for item in value)
            return found != (self.operator == "!=")
        if kind == "text":
            value = value.lower()
            if self.operator == "contains":
                return bound in value
            return (value == bound) != (self.operator == "!=")
        return _compare(value, self.operator, bound)


def _compare(value, operator: str, bound) -> bool:
    return {
        "=": value == bound,
        "!=": value != bound,
        "<": value < bound,
        "<=": value <= bound,
        ">": value > bound,
        ">=": value >= bound,
    }[operator]


def parse(text) -> Condition:
    """A condition from its text (``Condition`` objects pass through); one that does not read as
    ``COLUMN OPERATOR VALUE`` is a UserError showing how to write one."""
    if isinstance(text, Condition):
        return text
    if not isinstance(text, str):
        raise UserError(f"a condition is text, such as 'citations >= 10'; got {shown(repr(text))}")
    match = _PATTERN.match(text)
    if not match or not match.group(3):
        raise UserError(f"'{shown(text)}' is not a condition; {EXAMPLE}")
    operator = match.group(2).strip().lower()
    operator = "=" if operator == "==" else operator
    return Condition(_unquoted(match.group(1)), operator, _unquoted(match.group(3)))
