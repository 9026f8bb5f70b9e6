"""PDL Person Search's ``sql`` form, read into the Elasticsearch query it stands for.

Person Search input parameters (docs.peopledatalabs.com/docs/input-parameters-person-search-api,
and the spec's request body, ``oneOf`` ``query`` | ``sql``): "a SQL query of the format
``SELECT * FROM person WHERE XXX``", the examples' ``WHERE`` joining conditions with ``AND`` /
``OR`` / ``NOT`` and parentheses: ``field = 'value'``, ``!=``, ``<``, ``<=``, ``>``, ``>=``,
``IN ('a', 'b')``, ``LIKE '%text%'``, ``IS [NOT] NULL``; ``LIMIT`` is not supported (``size``
is). Each condition becomes the clause PDL's own translation gives it (``=`` a ``term``,
``IN`` a ``terms``, comparisons a ``range``, ``IS NOT NULL`` an ``exists``, ``LIKE`` a
``match_phrase`` of its text between the wildcards), so the result is evaluated by the same
code as a ``query`` (:mod:`shortlist.simulator.es_query`). Anything else is a 400.
"""

from __future__ import annotations

import re
from typing import Any

from shortlist.simulator.es_query import QueryError

_TOKENS = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<op><=|>=|!=|<>|=|<|>)"
    r"|(?P<punct>[(),;*])|(?P<word>[A-Za-z_][A-Za-z0-9_.]*))"
)
_HEAD = re.compile(r"^\s*select\s+\*\s+from\s+person\s+where\s+", re.IGNORECASE)
_RANGE = {"<": "lt", "<=": "lte", ">": "gt", ">=": "gte"}


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip().rstrip(";")
    while pos < len(text):
        m = _TOKENS.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise QueryError(f"sql: cannot read {text[pos : pos + 20]!r}")
        kind = m.lastgroup or ""
        value = m.group(kind)
        if kind == "str":
            value = value[1:-1].replace("''", "'")
        out.append((kind, value))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def word(self, *words: str) -> bool:
        kind, value = self.peek()
        if kind == "word" and value.lower() in words:
            self.at += 1
            return True
        return False

    def expect(self, kind: str, value: str | None = None) -> str:
        got_kind, got = self.peek()
        if got_kind != kind or (value is not None and got != value):
            raise QueryError(f"sql: expected {value or kind}, found {got or 'the end'!r}")
        self.at += 1
        return got

    def disjunction(self) -> dict[str, Any]:
        parts = [self.conjunction()]
        while self.word("or"):
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else {"bool": {"should": parts}}

    def conjunction(self) -> dict[str, Any]:
        parts = [self.negation()]
        while self.word("and"):
            parts.append(self.negation())
        return parts[0] if len(parts) == 1 else {"bool": {"must": parts}}

    def negation(self) -> dict[str, Any]:
        if self.word("not"):
            return {"bool": {"must_not": [self.negation()]}}
        if self.peek() == ("punct", "("):
            self.at += 1
            inner = self.disjunction()
            self.expect("punct", ")")
            return inner
        return self.condition()

    def value(self) -> str | int | float:
        kind, value = self.peek()
        if kind == "str":
            self.at += 1
            return value
        if kind == "num":
            self.at += 1
            return float(value) if "." in value else int(value)
        raise QueryError(f"sql: expected a value, found {value or 'the end'!r}")

    def condition(self) -> dict[str, Any]:
        field = self.expect("word")
        if self.word("is"):
            negated = self.word("not")
            if not self.word("null"):
                raise QueryError("sql: IS must be followed by [NOT] NULL")
            exists = {"exists": {"field": field}}
            return exists if negated else {"bool": {"must_not": [exists]}}
        negated = self.word("not")
        if self.word("in"):
            self.expect("punct", "(")
            values = [self.value()]
            while self.peek() == ("punct", ","):
                self.at += 1
                values.append(self.value())
            self.expect("punct", ")")
            clause: dict[str, Any] = {"terms": {field: values}}
        elif self.word("like"):
            text = self.value()
            if not isinstance(text, str):
                raise QueryError("sql: LIKE takes a string")
            clause = {"match_phrase": {field: text.replace("%", " ").strip()}}
        else:
            if negated:
                raise QueryError("sql: NOT goes before a condition, IN or LIKE")
            op = self.expect("op")
            value = self.value()
            if op in _RANGE:
                return {"range": {field: {_RANGE[op]: value}}}
            clause = {"term": {field: value}}
            if op in ("!=", "<>"):
                return {"bool": {"must_not": [clause]}}
            return clause
        return {"bool": {"must_not": [clause]}} if negated else clause


def sql_query(sql: Any) -> dict[str, Any]:
    """The Elasticsearch query a PDL ``sql`` string stands for (QueryError: a 400)."""
    if not isinstance(sql, str):
        raise QueryError("sql must be a string")
    head = _HEAD.match(sql)
    if head is None:
        raise QueryError("sql must read SELECT * FROM person WHERE …")
    parser = _Parser(_tokens(sql[head.end() :]))
    query = parser.disjunction()
    if parser.peek()[0] != "end":
        kind, value = parser.peek()
        if kind == "word" and value.lower() == "limit":
            raise QueryError("sql: LIMIT is not supported; use size")
        raise QueryError(f"sql: unexpected {value!r}")
    return query
