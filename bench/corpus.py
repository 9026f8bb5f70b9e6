"""Synthetic data for the benchmarks: job-listing texts (for the model) and a vector corpus (for
search), both deterministic from a seed.

The vector corpus is *clustered*, as text embeddings are: a Gaussian mixture in a 48-dim latent
space (200 clusters), mapped to 384 dims by a random orthonormal projection, plus isotropic noise,
then L2-normalised. Queries are fresh draws from the same mixture (similar to, never equal to, a
stored vector). Uniformly random unit vectors would be a poor stand-in: they have no
neighbourhood structure at all, which no embedding model produces.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

DIM = 384
LATENT_DIM = 48
CLUSTERS = 200
NOISE = 0.02
"""Per-dimension noise added after projection (relative to a unit-norm signal)."""

FloatArray = npt.NDArray[np.float32]

TITLES = (
    "Backend Engineer",
    "Senior Python Developer",
    "Data Engineer",
    "Machine Learning Engineer",
    "Site Reliability Engineer",
    "Frontend Developer",
    "Product Designer",
    "Engineering Manager",
    "DevOps Engineer",
    "Embedded Firmware Engineer",
    "Security Analyst",
    "Mobile Developer (iOS)",
    "Data Scientist",
    "QA Automation Engineer",
    "Technical Writer",
    "Solutions Architect",
)
COMPANIES = (
    "Acme Analytics",
    "Northwind Labs",
    "Globex Systems",
    "Initech",
    "Umbrella Health",
    "Hooli Cloud",
    "Vandelay Logistics",
    "Stark Robotics",
    "Wayne Fintech",
    "Tyrell Biotech",
    "Cyberdyne Energy",
    "Soylent Foods",
)
# Cities for the filters: "Lisbon" ≈ 10 % of the corpus, "Reykjavik" ≈ 1 %; no other city
# contains either as a substring, so a location filter selects exactly that share.
SELECTIVE_10 = "Lisbon"
SELECTIVE_1 = "Reykjavik"
OTHER_CITIES = (
    "Berlin",
    "Amsterdam",
    "London",
    "Paris",
    "Madrid",
    "Warsaw",
    "Prague",
    "Vienna",
    "Zurich",
    "Dublin",
    "Toronto",
    "Austin",
    "Denver",
    "Seattle",
    "Boston",
    "Singapore",
    "Sydney",
    "Tokyo",
)
SENTENCES = (
    "You will design, build and operate services that handle millions of requests a day.",
    "Our stack is Python, PostgreSQL, Kubernetes and a growing amount of Rust.",
    "You care about clean interfaces, observability and tests that catch real bugs.",
    "The team owns its roadmap and ships to production several times a day.",
    "Experience with distributed systems, queues and caching is a strong plus.",
    "You will mentor engineers and help shape our technical direction.",
    "We offer a competitive salary, equity, and a generous learning budget.",
    "Remote-friendly within two hours of the office time zone.",
    "You have shipped data pipelines that others depend on and can explain their trade-offs.",
    "Familiarity with machine learning models in production, from features to monitoring.",
    "You will work closely with product, design and customer support.",
    "On-call is shared fairly and compensated; incidents end with blameless reviews.",
    "We value written communication, small pull requests and kind code review.",
    "You will improve the reliability and latency of our public APIs.",
    "Experience with embedded C, real-time operating systems or FPGAs is welcome.",
    "We are a small team with a large impact on how people find work.",
)


def listing_texts(n: int, *, seed: int = 7, sentences: int = 6) -> list[dict[str, Any]]:
    """``n`` job listings (``ListingCreate`` fields), descriptions of ``sentences`` sentences:
    the model reads ~120-160 word pieces of each, like a real listing's first paragraphs."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        picks = rng.choice(len(SENTENCES), size=sentences, replace=False)
        rows.append(
            {
                "company_name": COMPANIES[int(rng.integers(len(COMPANIES)))],
                "job_title": TITLES[int(rng.integers(len(TITLES)))],
                "city_location": OTHER_CITIES[int(rng.integers(len(OTHER_CITIES)))],
                "description": f"Listing {i}. " + " ".join(SENTENCES[int(p)] for p in picks),
                "salary_min_ks": int(rng.integers(60, 120)),
                "salary_max_ks": int(rng.integers(120, 200)),
                "currency_code": "USD",
            }
        )
    return rows


@dataclass
class VectorCorpus:
    ids: list[uuid.UUID]
    vectors: FloatArray
    cities: list[str]
    queries: FloatArray


class _Mixture:
    def __init__(self, rng: np.random.Generator) -> None:
        # A random orthonormal map from the latent space into 384 dims.
        q, _ = np.linalg.qr(rng.standard_normal((DIM, LATENT_DIM)))
        self.projection = q.astype(np.float32)
        self.centers = rng.standard_normal((CLUSTERS, LATENT_DIM)).astype(np.float32)
        # Clusters of different spreads and sizes, as topics are.
        self.spread = rng.uniform(0.3, 0.8, CLUSTERS).astype(np.float32)
        weights = rng.pareto(1.5, CLUSTERS) + 1.0
        self.weights = weights / weights.sum()

    def draw(self, rng: np.random.Generator, n: int) -> FloatArray:
        cluster = rng.choice(CLUSTERS, size=n, p=self.weights)
        latent = (
            self.centers[cluster]
            + rng.standard_normal((n, LATENT_DIM), dtype=np.float32) * self.spread[cluster, None]
        )
        x = latent @ self.projection.T
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        x += rng.standard_normal((n, DIM), dtype=np.float32) * NOISE
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        return x.astype(np.float32)


def vector_corpus(n: int, n_queries: int, *, seed: int = 11) -> VectorCorpus:
    rng = np.random.default_rng(seed)
    mixture = _Mixture(rng)
    vectors = np.empty((n, DIM), dtype=np.float32)
    chunk = 20_000
    for start in range(0, n, chunk):
        vectors[start : start + chunk] = mixture.draw(rng, min(chunk, n - start))
    u = rng.random(n)
    others = rng.integers(len(OTHER_CITIES), size=n)
    cities = [
        SELECTIVE_1 if x < 0.01 else SELECTIVE_10 if x < 0.11 else OTHER_CITIES[int(o)]
        for x, o in zip(u, others, strict=True)
    ]
    ids = [uuid.UUID(bytes=rng.bytes(16), version=4) for _ in range(n)]
    return VectorCorpus(ids, vectors, cities, mixture.draw(rng, n_queries))


def exact_top_k(
    vectors: FloatArray, queries: FloatArray, k: int, mask: npt.NDArray[np.bool_] | None = None
) -> list[list[int]]:
    """Row indices of the ``k`` nearest vectors by cosine distance (numpy brute force)."""
    index = np.arange(len(vectors)) if mask is None else np.flatnonzero(mask)
    subset = vectors[index]
    kk = min(k, subset.shape[0])
    out: list[list[int]] = []
    for start in range(0, len(queries), 64):
        sims = queries[start : start + 64] @ subset.T
        part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        for row, cand in zip(sims, part, strict=True):
            best = cand[np.argsort(-row[cand], kind="stable")]
            out.append([int(index[j]) for j in best])
    return out
