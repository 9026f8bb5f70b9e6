"""Text helpers shared by every module that compares what people typed."""

from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    """Case- and accent-free text: "München" and "munchen", "São Paulo" and "sao paulo" are one.

    ``ß`` becomes ``ss`` (``casefold``), other letters lose their combining marks (NFKD).
    """
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))
