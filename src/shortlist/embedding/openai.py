"""Any OpenAI-compatible ``POST /embeddings`` endpoint: OpenAI, DeepInfra, Ollama, vLLM, TEI.

No retries here: one call, one classified outcome. Backing off is the indexer's job (seed:
``30 s × 2^attempt``, capped), which keeps the rows' transaction and the retry policy together.
What the embedder does keep is a 429's ``Retry-After``: until it has passed, every call of this
process fails at once (no request is sent), whichever worker makes it — the indexer and the
backfill's many candidate tasks share one embedder, and one of them being told to wait must
stop them all from calling.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from shortlist import metrics
from shortlist.embedding.base import (
    EmbeddingError,
    EmbeddingPermanentError,
    EmbeddingTransientError,
    check_texts,
    classify_http_status,
    l2_normalize,
)
from shortlist.public_address import tls_client_context

# "Invalid 'input[3]': ...", "$.input[3] is invalid", param "input[3]" — how providers point at
# the one input they reject.
_INPUT_INDEX = re.compile(r"input\[(\d+)\]")
_MAX_DETAIL = 300


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def _error_detail(response: httpx.Response) -> tuple[str, int | None]:
    """The provider's error message (truncated) and the input index it names, if any."""
    text = response.text
    message = text
    param: str | None = None
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            message = str(error.get("message") or error.get("detail") or text)
            param = str(error["param"]) if error.get("param") is not None else None
        elif isinstance(error, str):
            message = error
    index: int | None = None
    for source in (param, message):
        match = _INPUT_INDEX.search(source or "")
        if match:
            index = int(match.group(1))
            break
    return message.strip()[:_MAX_DETAIL], index


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible HTTP API.

    ``base_url`` is the API root, e.g. ``https://api.deepinfra.com/v1/openai`` or
    ``http://localhost:11434/v1``; requests go to ``{base_url}/embeddings``. Pass ``client`` to
    share a connection pool (it is then not closed by :meth:`aclose`).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        dim: int,
        timeout: float,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.dim = dim
        self.timeout = timeout
        self.name = "openai"
        self._api_key = api_key
        self._paused_until = 0.0
        """``time.monotonic()`` until which the provider asked us (429) not to call."""
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(timeout=timeout, verify=tls_client_context())

    def warm_up(self) -> None:
        """Nothing to load: the model runs at the provider."""

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> OpenAIEmbedder:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        # OpenAI's text-embedding-3-* default to 1536/3072 dimensions but can shorten their
        # (Matryoshka) vectors on request; other servers may reject an unknown ``dimensions``,
        # so it is only sent where it is known to work.
        if self.model.startswith("text-embedding-3"):
            payload["dimensions"] = self.dim
        return payload

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        started = time.perf_counter()
        try:
            check_texts(texts)
            self._check_not_paused()
            vectors = await self._embed(list(texts))
        except EmbeddingError as exc:
            kind = "transient" if isinstance(exc, EmbeddingTransientError) else "permanent"
            metrics.EMBED_ERRORS.labels(embedder=self.name, kind=kind).inc()
            raise
        metrics.EMBED_LATENCY.labels(embedder=self.name).observe(time.perf_counter() - started)
        return vectors

    def _check_not_paused(self) -> None:
        remaining = self._paused_until - time.monotonic()
        if remaining > 0:
            raise EmbeddingTransientError(
                f"embedding API paused after a 429 for another {remaining:.2f}s",
                retry_after=remaining,
                status=429,
            )

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        headers = {"Accept": "application/json"}
        if self._api_key:  # Ollama, local vLLM/TEI need none
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            response = await self._client.post(
                self.url, json=self._payload(texts), headers=headers, timeout=self.timeout
            )
        except httpx.TimeoutException as exc:
            raise EmbeddingTransientError(
                f"embedding request timed out after {self.timeout}s ({type(exc).__name__})"
            ) from exc
        except httpx.RequestError as exc:
            # Connection refused/reset, DNS, TLS, a broken or undecodable body: all IO trouble.
            raise EmbeddingTransientError(
                f"embedding request failed: {type(exc).__name__}: {exc}"
            ) from exc

        if response.status_code >= 400:
            raise self._http_error(response, len(texts))
        if not response.content.strip():
            raise EmbeddingTransientError(
                f"empty response from embedding API (HTTP {response.status_code})",
                status=response.status_code,
            )
        return self._parse(response, len(texts))

    def _http_error(self, response: httpx.Response, n: int) -> EmbeddingError:
        status = response.status_code
        detail, index = _error_detail(response)
        message = f"embedding API returned HTTP {status}: {detail}"
        if classify_http_status(status) is EmbeddingTransientError:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            if status == 429 and retry_after:
                self._paused_until = max(self._paused_until, time.monotonic() + retry_after)
            return EmbeddingTransientError(message, retry_after=retry_after, status=status)
        bad_index = index if index is not None and 0 <= index < n else None
        return EmbeddingPermanentError(message, bad_index=bad_index, status=status)

    def _parse(self, response: httpx.Response, n: int) -> list[list[float]]:
        try:
            body = response.json()
        except ValueError as exc:
            raise EmbeddingPermanentError(
                f"embedding API returned invalid JSON: {response.text[:_MAX_DETAIL]!r}"
            ) from exc
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise EmbeddingPermanentError("embedding API response has no 'data' list")
        if not data:
            # An empty answer comes from overloaded gateways and is gone on retry.
            raise EmbeddingTransientError("embedding API returned no embeddings")
        if len(data) != n:
            raise EmbeddingPermanentError(
                f"embedding API returned {len(data)} embeddings for {n} inputs"
            )

        ordered: list[list[float] | None] = [None] * n
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                raise EmbeddingPermanentError("embedding API data item is not an object")
            index = item.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
                raise EmbeddingPermanentError(f"embedding API returned bad index {index!r}")
            if ordered[index] is not None:
                raise EmbeddingPermanentError(f"embedding API returned index {index} twice")
            embedding = item.get("embedding")
            if not isinstance(embedding, list) or not all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in embedding
            ):
                raise EmbeddingPermanentError(
                    "embedding API returned a non-float embedding "
                    "(encoding_format=float not honoured?)"
                )
            if len(embedding) != self.dim:
                raise EmbeddingPermanentError(
                    f"embedding API returned {len(embedding)} dimensions, expected {self.dim} "
                    f"(model {self.model!r}; check SHORTLIST_EMBEDDER_MODEL / EMBEDDING_DIM)"
                )
            ordered[index] = l2_normalize(embedding, index=index)
        # n distinct in-range indexes for n items: every slot is filled.
        return [v for v in ordered if v is not None]
