"""Bulk import of records from JSONL or CSV: the part every ``shortlist ingest`` shares.

Every row is validated with the corpus's pydantic model; a bad row is reported with its line
number and the reasons, and the import goes on. Good rows are inserted in batches, one
transaction per batch, so the indexer starts embedding the first batches while later ones are
still being read. The terminal presentation (progress bar, summary) lives in
``shortlist.cli.ingest``; this module reports through callbacks and an ``IngestReport``.

Format: ``.jsonl``/``.ndjson``/``.json`` are JSON Lines, ``.csv``/``.tsv`` are CSV; any other
name is sniffed (a first non-blank byte ``{`` means JSON Lines). Files are UTF-8 (a BOM is
fine). CSV columns are the field names of the model, or short forms a corpus declares as
aliases; other columns are ignored (and named once in the report). Empty CSV cells mean "not
given" for the fields a corpus lists as ``blank_is_absent``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from shortlist.db.types import AsyncConn
from shortlist.errors import BadInput

M = TypeVar("M", bound=BaseModel)
DEFAULT_BATCH_SIZE = 500

FileFormat = Literal["jsonl", "csv"]

_EXTENSIONS: dict[str, FileFormat] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".tsv": "csv",
}
_CSV_DELIMITERS = ",;\t|"
_PROGRESS_EVERY = 200


@dataclass(frozen=True)
class BadRow:
    line: int
    reason: str


@dataclass(frozen=True)
class ParsedRow(Generic[M]):
    line: int
    record: M | None
    error: str | None = None


# The report keeps this many bad rows (all are counted, and all go to ``on_bad_row``), so a
# file of millions of bad rows cannot exhaust memory.
MAX_BAD_ROWS_KEPT = 10_000


@dataclass
class IngestReport:
    path: Path
    format: FileFormat
    rows: int = 0
    inserted: int = 0
    bad_count: int = 0
    bad_rows: list[BadRow] = field(default_factory=list)
    """The first ``MAX_BAD_ROWS_KEPT`` bad rows, in file order."""
    ignored_columns: set[str] = field(default_factory=set)


def detect_format(path: Path, head: bytes) -> FileFormat:
    by_name = _EXTENSIONS.get(path.suffix.lower())
    if by_name:
        return by_name
    return "jsonl" if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") else "csv"


def describe_validation_error(exc: ValidationError) -> str:
    """Every problem of a row, "field: message; …"."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


class RecordFileReader(Generic[M]):
    """Iterates the rows of one import file as ``ParsedRow``s, counting bytes for progress.

    Opening the file (``open``) raises ``BadInput`` when it cannot be read at all; problems of
    single rows never raise, they come back as ``ParsedRow.error``.
    """

    model: type[M]
    aliases: Mapping[str, str] = MappingProxyType({})
    blank_is_absent: frozenset[str] = frozenset()
    """Fields whose empty value means "not given", so the model's default applies."""

    def __init__(self, path: Path) -> None:
        self.fields = frozenset(self.model.model_fields)
        self.path = path
        self.size = 0
        self.bytes_read = 0
        self.ignored_columns: set[str] = set()
        self.format: FileFormat = "jsonl"
        self._file: BinaryIO | None = None

    def open(self) -> RecordFileReader[M]:
        try:
            self._file = self.path.open("rb")
            self.size = self.path.stat().st_size
            head = self._file.read(4096)
            self._file.seek(0)
        except OSError as exc:
            raise BadInput(f"cannot read {self.path}: {exc.strerror or exc}") from None
        if b"\x00" in head:
            self.close()
            raise BadInput(f"{self.path} is not a text file (JSON Lines or CSV expected)")
        self.format = detect_format(self.path, head)
        return self

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> RecordFileReader[M]:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[ParsedRow[M]]:
        if self._file is None:
            raise RuntimeError(f"{type(self).__name__} used before open()")
        if self.format == "jsonl":
            return self._jsonl(self._file)
        return self._csv(self._file)

    # --- the two formats ----------------------------------------------------------------

    def _jsonl(self, f: BinaryIO) -> Iterator[ParsedRow[M]]:
        for number, raw in enumerate(f, start=1):
            self.bytes_read += len(raw)
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                yield ParsedRow(number, None, "not valid UTF-8")
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                yield ParsedRow(number, None, f"not valid JSON: {exc.msg} (column {exc.colno})")
                continue
            except RecursionError:
                # json.loads recurses per nesting level; a hostile line must stay one bad row.
                yield ParsedRow(number, None, "JSON nested too deeply")
                continue
            if not isinstance(value, dict):
                yield ParsedRow(number, None, f"expected a JSON object, got {type(value).__name__}")
                continue
            yield self._validate(number, value)

    def _csv(self, f: BinaryIO) -> Iterator[ParsedRow[M]]:
        bad_lines: set[int] = set()
        physical = 0

        def lines() -> Iterator[str]:
            # Decoded line by line so one badly encoded line spoils one row, not the import.
            nonlocal physical
            for raw in f:
                physical += 1
                self.bytes_read += len(raw)
                if physical == 1:
                    raw = raw.removeprefix(b"\xef\xbb\xbf")
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError:
                    bad_lines.add(physical)
                    yield raw.decode("utf-8", errors="replace")

        source = lines()
        header_line = next(source, "")
        delimiter = "\t" if self.path.suffix.lower() == ".tsv" else _guess_delimiter(header_line)
        header = next(csv.reader([header_line], delimiter=delimiter), [])
        columns = [self._canonical(h) for h in header]
        if not any(c in self.fields for c in columns):
            names = ", ".join(sorted(self.fields))
            raise BadInput(f"{self.path}: the first line must name the columns ({names})")
        self.ignored_columns.update(c for c in columns if c not in self.fields and c)
        reader = csv.reader(source, delimiter=delimiter)
        while True:
            start = physical + 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield ParsedRow(start, None, f"unreadable CSV: {exc}")
                continue
            if not any(c.strip() for c in cells):
                continue  # blank line
            if any(n in bad_lines for n in range(start, physical + 1)):
                yield ParsedRow(start, None, "not valid UTF-8")
                continue
            if len(cells) > len(columns):
                yield ParsedRow(
                    start,
                    None,
                    f"{len(cells)} values but the header names {len(columns)} columns",
                )
                continue
            yield self._validate(start, dict(zip(header, cells, strict=False)))

    def _canonical(self, name: str) -> str:
        key = "_".join(name.strip().lower().split())
        return self.aliases.get(key, key)

    def _validate(self, line: int, value: dict[str, Any]) -> ParsedRow[M]:
        data: dict[str, Any] = {}
        for key, item in value.items():
            name = self._canonical(str(key))
            if name not in self.fields:
                if name:
                    self.ignored_columns.add(name)
                continue
            if name in self.blank_is_absent and (item is None or item == ""):
                continue  # not given: the default applies
            # The canonical name wins over a short form given in the same row.
            if name not in data or str(key).strip().lower() == name:
                data[name] = item
        try:
            return ParsedRow(line, self.model.model_validate(data))
        except ValidationError as exc:
            return ParsedRow(line, None, describe_validation_error(exc))


def _guess_delimiter(header_line: str) -> str:
    """The delimiter used most in the header line (headers are rarely quoted, so a plain
    count works where ``csv.Sniffer`` gets confused by long quoted descriptions)."""
    counts = {d: header_line.count(d) for d in _CSV_DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


InsertBatch = Callable[[AsyncConn, list[M]], Awaitable[int]]
"""Inserts one batch inside the caller's transaction; returns rows inserted."""


async def ingest_records(
    conn: AsyncConn,
    reader: RecordFileReader[M],
    insert_batch: InsertBatch[M],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_bad_row: Callable[[BadRow], None] | None = None,
    on_progress: Callable[[RecordFileReader[M], int], None] | None = None,
) -> IngestReport:
    """Read every row of an opened ``reader``; insert the good ones in batches."""
    report = IngestReport(reader.path, reader.format)
    batch: list[M] = []

    async def flush() -> None:
        if batch:
            async with conn.transaction():
                report.inserted += await insert_batch(conn, batch)
            batch.clear()
        if on_progress is not None:
            on_progress(reader, report.rows)

    for row in reader:
        report.rows += 1
        if row.record is None:
            bad = BadRow(row.line, row.error or "invalid")
            report.bad_count += 1
            if len(report.bad_rows) < MAX_BAD_ROWS_KEPT:
                report.bad_rows.append(bad)
            if on_bad_row is not None:
                on_bad_row(bad)
        else:
            batch.append(row.record)
        if len(batch) >= batch_size:
            await flush()
        elif on_progress is not None and report.rows % _PROGRESS_EVERY == 0:
            on_progress(reader, report.rows)
    await flush()
    report.ignored_columns = set(reader.ignored_columns)
    return report
