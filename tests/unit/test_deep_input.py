"""Deeply nested input (a JSONL line, a multipart body) is bad input, not a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shortlist.ingest_files import RecordFileReader
from shortlist.listings.ingest import ListingFileReader
from shortlist.listings.mail.parse import read_message
from tests.integration.test_bad_input import GOOD_LISTING, _nested_multipart


def test_deep_multipart_parses_or_is_bad_input() -> None:
    """Moderate nesting (a forwarded forward) still works."""
    assert read_message(_nested_multipart(19)).description == "The job."


def _rows(path: Path) -> list[tuple[int, str | None]]:
    reader: RecordFileReader[Any]
    with ListingFileReader(path) as reader:
        return [(row.line, row.error) for row in reader]


def test_a_deeply_nested_jsonl_line_is_one_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    good = json.dumps(GOOD_LISTING).encode()
    path.write_bytes(good + b"\n" + b"[" * 100_000 + b"\n" + good + b"\n")
    rows = _rows(path)
    assert [(line, error is None) for line, error in rows] == [(1, True), (2, False), (3, True)]
