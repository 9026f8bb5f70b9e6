"""Build the configured embedder (``SHORTLIST_EMBEDDER``)."""

from __future__ import annotations

from urllib.parse import urlsplit

from shortlist.config import Settings
from shortlist.embedding.base import Embedder
from shortlist.embedding.model_space import ModelSpace
from shortlist.errors import ConfigError


def check_embedder(settings: Settings) -> None:
    """Raise ``ConfigError`` if the settings' embedder cannot work (nothing is built)."""
    if settings.embedder == "local":
        from shortlist.embedding.local import DIM

        if settings.embedding_dim != DIM:
            raise ConfigError(
                f"SHORTLIST_EMBEDDING_DIM={settings.embedding_dim}, but the local model "
                f"produces {DIM}-dimensional vectors"
            )
    elif settings.embedder != "openai":
        raise ConfigError(f"unknown SHORTLIST_EMBEDDER {settings.embedder!r} (local | openai)")


def make_embedder(settings: Settings) -> Embedder:
    """``local`` (default, all-MiniLM-L6-v2, 384-d) or ``openai`` (any compatible endpoint).

    The model is not loaded here; call ``warm_up()`` on a ``LocalEmbedder`` to load it eagerly.
    """
    check_embedder(settings)
    if settings.embedder == "local":
        from shortlist.embedding.local import LocalEmbedder

        return LocalEmbedder(cache_dir=settings.model_cache_dir, int8_queries=settings.query_int8)
    from shortlist.embedding.openai import OpenAIEmbedder

    return OpenAIEmbedder(
        base_url=settings.embedder_url,
        api_key=settings.embedder_api_key,
        model=settings.embedder_model,
        dim=settings.embedding_dim,
        timeout=settings.embedder_timeout,
    )


LOCAL_MODEL = "all-MiniLM-L6-v2"
"""The model the ``local`` embedder runs (bundled, offline)."""


def configured_model(settings: Settings) -> tuple[str, str, int]:
    """(kind, model, dim) of the settings' embedder: what the first start names the stored
    vectors after (shortlist.embedding.spaces)."""
    if settings.embedder == "local":
        return "local", LOCAL_MODEL, settings.embedding_dim
    return settings.embedder, settings.embedder_model, settings.embedding_dim


def origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lower-case, default ports left out."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    port = parts.port
    default = {"http": 80, "https": 443}.get(scheme)
    host = (parts.hostname or "").lower()
    return f"{scheme}://{host}" + (f":{port}" if port and port != default else "")


def api_key_for(url: str, settings: Settings) -> str:
    """The API key sent to the embedder at ``url``: a key is bound to its URL's origin, so a
    model space naming another vendor (``embeddings migrate --url``) never receives the
    configured vendor's key. ``SHORTLIST_EMBEDDER_API_KEY`` goes to the origin of
    ``SHORTLIST_EMBEDDER_URL``; ``SHORTLIST_EMBEDDER_API_KEYS`` (JSON: origin → key) names the
    keys of other origins. Any other origin gets no key."""
    wanted = origin(url)
    for bound_url, key in settings.embedder_api_keys.items():
        if origin(bound_url) == wanted:
            return key
    if wanted == origin(settings.embedder_url):
        return settings.embedder_api_key
    return ""


def make_space_embedder(space: ModelSpace, settings: Settings) -> Embedder:
    """The embedder of a registered model space. Its key and timeout come from the settings
    (keys are never stored in the table), the key bound to its URL (:func:`api_key_for`); its
    URL from the space, else the settings."""
    if space.kind is None:
        return make_embedder(settings)
    if space.kind == "local":
        return _local_space_embedder(space, settings)
    if space.kind == "openai":
        from shortlist.embedding.openai import OpenAIEmbedder

        url = space.url or settings.embedder_url
        return OpenAIEmbedder(
            base_url=url,
            api_key=api_key_for(url, settings),
            model=space.model or settings.embedder_model,
            dim=space.dim,
            timeout=settings.embedder_timeout,
        )
    raise ConfigError(f"unknown embedder kind {space.kind!r} (local | openai)")


def _local_space_embedder(space: ModelSpace, settings: Settings) -> Embedder:
    """The bundled all-MiniLM-L6-v2 (384-d), or the optional all-mpnet-base-v2 (768-d) when its
    packages are installed (shortlist.embedding.bundled; a one-line ConfigError otherwise)."""
    from shortlist.embedding import bundled
    from shortlist.embedding.local import DIM, LocalEmbedder

    if space.model == LOCAL_MODEL and space.dim == DIM:
        return LocalEmbedder(cache_dir=settings.model_cache_dir, int8_queries=settings.query_int8)
    if space.model == bundled.MPNET and space.dim == bundled.MPNET_DIM:
        embedder = LocalEmbedder(
            model_path=bundled.model_path(settings.model_cache_dir),
            cache_dir=settings.model_cache_dir,
            int8_queries=False,  # its int8 copy's ranking was never measured
        )
        embedder.dim = bundled.MPNET_DIM
        return embedder
    raise ConfigError(
        f"the local embedder runs {LOCAL_MODEL} ({DIM}-d) or {bundled.MPNET}"
        f" ({bundled.MPNET_DIM}-d), not {space.model} ({space.dim}-d)"
    )
