"""Build the configured embedder (``SHORTLIST_EMBEDDER``)."""

from __future__ import annotations

from shortlist.config import Settings
from shortlist.embedding.base import Embedder
from shortlist.errors import ConfigError


def make_embedder(settings: Settings) -> Embedder:
    """``local`` (default, all-MiniLM-L6-v2, 384-d) or ``openai`` (any compatible endpoint).

    The model is not loaded here; call ``warm_up()`` on a ``LocalEmbedder`` to load it eagerly.
    """
    if settings.embedder == "local":
        from shortlist.embedding.local import DIM, LocalEmbedder

        if settings.embedding_dim != DIM:
            raise ConfigError(
                f"SHORTLIST_EMBEDDING_DIM={settings.embedding_dim}, but the local model "
                f"produces {DIM}-dimensional vectors"
            )
        return LocalEmbedder()
    if settings.embedder == "openai":
        from shortlist.embedding.openai import OpenAIEmbedder

        return OpenAIEmbedder(
            base_url=settings.embedder_url,
            api_key=settings.embedder_api_key,
            model=settings.embedder_model,
            dim=settings.embedding_dim,
            timeout=settings.embedder_timeout,
        )
    raise ConfigError(f"unknown SHORTLIST_EMBEDDER {settings.embedder!r} (local | openai)")
