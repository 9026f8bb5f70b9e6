"""The Elasticsearch 7.7 query subset that PDL's Person Search documents, evaluated faithfully.

PDL's Person Search takes ``{"query": <Elasticsearch query>}`` ("Person Search API", input
parameters; the OpenAPI spec's ``query``: "An Elasticsearch (v7.7) query"). The clauses below
follow the Elasticsearch 7.7 Query DSL reference:

- ``bool`` (``must``, ``filter``, ``should``, ``must_not``, ``minimum_should_match``): a
  document matches every ``must`` and ``filter`` clause and no ``must_not`` clause; ``should``
  clauses are optional when the bool has a ``must`` or ``filter`` clause, otherwise at least
  one must match — unless ``minimum_should_match`` says how many ("Boolean query").
- ``match``: the query text is analysed like the field (lowercased, split on
  non-alphanumerics) and its terms are ORed by default; ``operator: "and"`` needs all of
  them, ``minimum_should_match`` a number or percentage of them ("Match query"). On a keyword
  field the whole text is one exact term.
- ``match_phrase``: the analysed terms in that order, next to each other ("Match phrase").
- ``term`` / ``terms``: exact values, not analysed ("Term query": on a text field a term
  matches one analysed token; PDL stores keyword values lowercase).
- ``range`` (``gt``, ``gte``, ``lt``, ``lte``) on numeric fields, ``exists``, ``match_all``.

Anything else — another clause, an unknown field, a malformed clause — raises
:class:`QueryError` (the route answers PDL's 400 ``invalid_request_error``).

Matches come in the store's fixed order, whatever the query: no PDL page (Person Search API
input parameters and output response, ``pdl-specs.json``) promises an order of results or
that ``should`` clauses rank, so a client that needs a record must filter for it (``must`` /
``filter``), not hope it sorts first. A ``should`` clause here only counts toward
``minimum_should_match`` and the no-``must`` rule above.

Evaluation runs on inverted indexes (token / keyword value -> ids), built per field on first
use, and boolean masks over the whole population (numpy), so a query costs a few array
operations per clause rather than a scan of every person.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

FieldKind = Literal["text", "keyword", "integer"]
Mask = npt.NDArray[np.bool_]

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


class QueryError(ValueError):
    """A query PDL would refuse with 400 ``invalid_request_error``."""


def analyse(text: str) -> list[str]:
    """The standard analyser, roughly: lowercase, split on anything not a letter or digit."""
    return _TOKEN.findall(text.lower())


@dataclass(repr=False)  # a field holds a value per document: never formatted whole
class _Field:
    kind: FieldKind
    values: list[Any]  # per document: str, list[str], int or None
    postings: dict[str, Mask] = field(default_factory=dict)
    tokens: list[list[str]] | None = None
    numbers: npt.NDArray[np.float64] | None = None
    present: Mask | None = None


class Store:
    """Documents seen as fields; ``column(name)`` gives one field's value per document.

    Indexes are built per field on first use and kept: the population never changes.
    """

    def __init__(
        self,
        size: int,
        kinds: Mapping[str, FieldKind],
        column: Callable[[str], list[Any]],
        order: Sequence[float],
    ) -> None:
        self.size = size
        self.kinds = dict(kinds)
        self._column = column
        self._fields: dict[str, _Field] = {}
        # Matches are returned in this fixed order (higher first), unrelated to any query.
        self.order = np.asarray(order, dtype=np.float64)

    def _field(self, name: str) -> _Field:
        if name not in self.kinds:
            raise QueryError(f"{name} is not a valid field")
        found = self._fields.get(name)
        if found is None:
            found = self._fields[name] = _Field(self.kinds[name], self._column(name))
        return found

    def _postings(self, f: _Field) -> dict[str, list[int]]:
        ids: dict[str, list[int]] = defaultdict(list)
        for i, value in enumerate(f.values):
            for v in value if isinstance(value, list) else [value]:
                if v is None:
                    continue
                if f.kind == "text":
                    for token in set(analyse(str(v))):
                        ids[token].append(i)
                else:
                    ids[str(v)].append(i)
        return ids

    def term_mask(self, name: str, term: str) -> Mask:
        f = self._field(name)
        if not f.postings and f.kind != "integer":
            for key, ids in self._postings(f).items():
                mask = np.zeros(self.size, dtype=np.bool_)
                mask[ids] = True
                f.postings[key] = mask
            f.postings.setdefault("\x00built", np.zeros(self.size, dtype=np.bool_))
        if f.kind == "integer":
            try:
                equal: Mask = self.numbers(name) == float(term)
                return equal
            except ValueError as exc:
                raise QueryError(f"{term!r} is not a number for {name}") from exc
        found = f.postings.get(term)
        return found if found is not None else np.zeros(self.size, dtype=np.bool_)

    def warm(self, names: Sequence[str]) -> None:
        """Build the indexes of ``names`` now (a server's start, not its first query: a client
        with a short timeout must not pay for them)."""
        for name in names:
            kind = self.kind(name)
            if kind == "integer":
                self.numbers(name)
                continue
            self.term_mask(name, "")
            if kind == "text":
                self.tokens(name)

    def tokens(self, name: str) -> list[list[str]]:
        f = self._field(name)
        if f.tokens is None:
            f.tokens = [
                [t for v in (x if isinstance(x, list) else [x]) if v is not None
                 for t in analyse(str(v))]
                for x in f.values
            ]  # fmt: skip
        return f.tokens

    def numbers(self, name: str) -> npt.NDArray[np.float64]:
        f = self._field(name)
        if f.kind != "integer":
            raise QueryError(f"range needs a numeric field; {name} is {f.kind}")
        if f.numbers is None:
            f.numbers = np.array(
                [np.nan if v is None else float(v) for v in f.values], dtype=np.float64
            )
        return f.numbers

    def present(self, name: str) -> Mask:
        f = self._field(name)
        if f.present is None:
            f.present = np.array(
                [v is not None and v != [] and v != "" and v is not False for v in f.values],
                dtype=np.bool_,
            )
        return f.present

    def kind(self, name: str) -> FieldKind:
        return self._field(name).kind


def _list(value: Any, where: str) -> list[Any]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return value
    raise QueryError(f"[{where}] must be an object or an array of objects")


def _single(spec: Any, clause: str) -> tuple[str, Any]:
    if not isinstance(spec, dict) or len(spec) != 1:
        raise QueryError(f"[{clause}] query must name exactly one field")
    [(name, value)] = spec.items()
    return str(name), value


def _msm(spec: Any, optional: int) -> int:
    """``minimum_should_match`` as a count of ``optional`` clauses or terms (ES rules: an
    integer, a negative integer, or a percentage, rounded down)."""
    if isinstance(spec, bool):
        raise QueryError("minimum_should_match must be a number or a percentage")
    if isinstance(spec, int):
        n = spec if spec >= 0 else optional + spec
    elif isinstance(spec, str) and re.fullmatch(r"-?\d+%", spec.strip()):
        pct = int(spec.strip()[:-1])
        n = (
            math.floor(optional * pct / 100)
            if pct >= 0
            else optional + math.ceil(optional * pct / 100)
        )
    elif isinstance(spec, str) and re.fullmatch(r"-?\d+", spec.strip()):
        return _msm(int(spec), optional)
    else:
        raise QueryError(f"minimum_should_match {spec!r} is not supported")
    return max(0, min(optional, n))


class _Evaluator:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.n = store.size

    def none(self) -> Mask:
        return np.zeros(self.n, np.bool_)

    def all(self) -> Mask:
        return np.ones(self.n, np.bool_)

    def clause(self, clause: Any) -> Mask:
        if not isinstance(clause, dict) or len(clause) != 1:
            raise QueryError("a query clause must be an object with exactly one key")
        [(kind, spec)] = clause.items()
        handler = getattr(self, f"q_{kind}", None)
        if handler is None:
            raise QueryError(f"unknown query [{kind}]")
        result: Mask = handler(spec)
        return result

    def q_match_all(self, spec: Any) -> Mask:
        if not isinstance(spec, dict):
            raise QueryError("[match_all] must be an object")
        return self.all()

    def q_bool(self, spec: Any) -> Mask:
        if not isinstance(spec, dict):
            raise QueryError("[bool] must be an object")
        unknown = set(spec) - {"must", "filter", "should", "must_not", "minimum_should_match",
                               "boost"}  # fmt: skip
        if unknown:
            raise QueryError(f"[bool] query does not support [{sorted(unknown)[0]}]")
        mask = np.ones(self.n, np.bool_)
        for c in [*_list(spec.get("must", []), "must"), *_list(spec.get("filter", []), "filter")]:
            mask &= self.clause(c)
        for c in _list(spec.get("must_not", []), "must_not"):
            mask &= ~self.clause(c)
        should = _list(spec.get("should", []), "should")
        if should:
            # Optional beside a must or filter clause, else at least one must match.
            default = 0 if ("must" in spec or "filter" in spec) else 1
            needed = (
                _msm(spec["minimum_should_match"], len(should))
                if "minimum_should_match" in spec
                else default
            )
            count = np.zeros(self.n, dtype=np.int32)
            for c in should:
                count += self.clause(c)
            mask &= count >= needed
        elif "minimum_should_match" in spec and _msm(spec["minimum_should_match"], 0) > 0:
            return self.none()
        return mask

    def _text_query(self, spec: Any, clause: str) -> tuple[str, str, dict[str, Any]]:
        name, value = _single(spec, clause)
        if isinstance(value, dict):
            unknown = set(value) - {"query", "operator", "minimum_should_match", "boost",
                                    "analyzer", "slop", "zero_terms_query"}  # fmt: skip
            if "query" not in value or unknown:
                raise QueryError(f"[{clause}] malformed query for field [{name}]")
            return name, str(value["query"]), value
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return name, str(value), {}
        raise QueryError(f"[{clause}] malformed query for field [{name}]")

    def q_match(self, spec: Any) -> Mask:
        name, text, options = self._text_query(spec, "match")
        if self.store.kind(name) != "text":
            return self._exact(name, [text])
        terms = list(dict.fromkeys(analyse(text)))
        if not terms:
            return self.none()
        operator = str(options.get("operator", "or")).lower()
        if operator not in ("or", "and"):
            raise QueryError(f"[match] operator [{operator}] is not supported")
        needed = len(terms) if operator == "and" else 1
        if "minimum_should_match" in options and operator == "or":
            needed = max(1, _msm(options["minimum_should_match"], len(terms)))
        count = np.zeros(self.n, dtype=np.int32)
        for t in terms:
            count += self.store.term_mask(name, t)
        matched: Mask = count >= needed
        return matched

    def q_match_phrase(self, spec: Any) -> Mask:
        name, text, _ = self._text_query(spec, "match_phrase")
        if self.store.kind(name) != "text":
            return self._exact(name, [text])
        terms = analyse(text)
        if not terms:
            return self.none()
        mask = np.ones(self.n, np.bool_)
        for t in terms:
            mask &= self.store.term_mask(name, t)
        if len(terms) > 1:
            tokens = self.store.tokens(name)
            k = len(terms)
            for i in np.flatnonzero(mask):
                doc = tokens[i]
                if not any(doc[j : j + k] == terms for j in range(len(doc) - k + 1)):
                    mask[i] = False
        return mask

    def _exact(self, name: str, values: list[Any]) -> Mask:
        mask = np.zeros(self.n, np.bool_)
        for v in values:
            if isinstance(v, dict | list) or v is None:
                raise QueryError(f"[term] value for [{name}] must be a string or number")
            term = str(v).lower() if isinstance(v, bool) else str(v)
            mask |= self.store.term_mask(name, term)
        return mask

    def q_term(self, spec: Any) -> Mask:
        name, value = _single(spec, "term")
        if isinstance(value, dict):
            if "value" not in value or set(value) - {"value", "boost", "case_insensitive"}:
                raise QueryError(f"[term] malformed query for field [{name}]")
            value = value["value"]
        return self._exact(name, [value])

    def q_terms(self, spec: Any) -> Mask:
        if not isinstance(spec, dict):
            raise QueryError("[terms] must be an object")
        fields = {k: v for k, v in spec.items() if k != "boost"}
        if len(fields) != 1:
            raise QueryError("[terms] query must name exactly one field")
        [(name, values)] = fields.items()
        if not isinstance(values, list):
            raise QueryError(f"[terms] values for [{name}] must be an array")
        return self._exact(name, values)

    def q_range(self, spec: Any) -> Mask:
        name, bounds = _single(spec, "range")
        if not isinstance(bounds, dict) or not bounds:
            raise QueryError(f"[range] malformed query for field [{name}]")
        values = self.store.numbers(name)
        mask = ~np.isnan(values)
        ops: dict[str, Callable[[Any, float], Any]] = {
            "gte": np.greater_equal,
            "gt": np.greater,
            "lte": np.less_equal,
            "lt": np.less,
        }
        for op, bound in bounds.items():
            if op == "boost":
                continue
            if op not in ops:
                raise QueryError(f"[range] query does not support [{op}]")
            try:
                limit = float(bound)
            except (TypeError, ValueError) as exc:
                raise QueryError(f"[range] bound {bound!r} is not a number") from exc
            with np.errstate(invalid="ignore"):
                mask &= ops[op](values, limit)
        return mask

    def q_exists(self, spec: Any) -> Mask:
        if not isinstance(spec, dict) or set(spec) - {"field", "boost"} or "field" not in spec:
            raise QueryError("[exists] must name a [field]")
        return self.store.present(str(spec["field"])).copy()


def evaluate(store: Store, query: Any) -> npt.NDArray[np.intp]:
    """The ids of the documents ``query`` matches, in the store's fixed order (see above)."""
    ids = np.flatnonzero(_Evaluator(store).clause(query))
    ordered: npt.NDArray[np.intp] = ids[np.argsort(-store.order[ids], kind="stable")]
    return ordered
