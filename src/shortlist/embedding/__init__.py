"""Text → vector. ``base`` defines the protocol and errors; ``local`` and ``openai`` implement
it; ``factory.make_embedder`` picks one from the settings."""

from shortlist.embedding.base import (
    Embedder,
    EmbeddingError,
    EmbeddingPermanentError,
    EmbeddingTransientError,
    classify_http_status,
    embed_isolating_failures,
)
from shortlist.embedding.factory import make_embedder

__all__ = [
    "Embedder",
    "EmbeddingError",
    "EmbeddingPermanentError",
    "EmbeddingTransientError",
    "classify_http_status",
    "embed_isolating_failures",
    "make_embedder",
]
