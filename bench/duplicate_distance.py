"""Cosine distances between postings of one employer, for ``SHORTLIST_DUPLICATE_DISTANCE``.

The indexer links a job listing to an earlier open one of its company and city when their
vectors are within that distance (``shortlist.indexer``, ``link_near_duplicates``). Measured
with the local model on the text the indexer embeds (``title at company, city\\ndescription``)::

    python -m bench.duplicate_distance [--csv PATH]

* the USAJOBS development set (``/work/shared/relevance/``, ``SHORTLIST_BENCH_RELEVANCE_CSV``):
  title and agency only, the department as the description; one employer is a department and
  agency. Reposts with the same title are identical texts (distance 0); the figures are for
  reposts whose title differs only in case, punctuation or spacing, and for pairs of
  differently titled postings (other jobs, and some reworded reposts), with a sample of each
  band below 0.03 to read;
* the sample corpus (descriptions of four to seven sentences): two listings of one company,
  and one posting against itself with its last sentence rewritten, moved to another city, or
  "Senior " put before its title.
"""

from __future__ import annotations

import argparse
import collections
import csv
import os
import random
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from shortlist.embedding.local import LocalEmbedder
from shortlist.listings.sample import iter_sample_listings

DEFAULT_CSV = Path("/work/shared/relevance/usajobs_2024_2025.csv")
THRESHOLDS = (0.01, 0.02, 0.03, 0.05)


def _unit(vectors: list[list[float]]) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    return array / np.linalg.norm(array, axis=1, keepdims=True)


def _summary(name: str, distances: Sequence[float]) -> None:
    d = np.asarray(distances)
    pct = np.percentile(d, [0, 1, 5, 50, 95, 100])
    print(
        f"{name}: {len(d)} pairs; percentiles 0/1/5/50/95/100: " + " ".join(f"{q:.4f}" for q in pct)
    )
    print("    within " + ", ".join(f"{t}: {(d <= t).mean() * 100:.2f} %" for t in THRESHOLDS))


def _title_key(title: str) -> str:
    return " ".join(re.sub(r"\W+", " ", title).lower().split())


def usajobs(embedder: LocalEmbedder, path: Path) -> None:
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    texts: dict[str, dict[str, str]] = {}
    for r in rows:
        texts.setdefault(
            f"{r['position_title']} at {r['agency']}, United States\n{r['department']}", r
        )
    print(f"USAJOBS: {len(rows)} postings, {len(texts)} distinct texts")
    keys = list(texts)
    vectors = _unit(embedder._encode_bulk(keys))
    by_employer: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
    for i, key in enumerate(keys):
        by_employer[(texts[key]["department"], texts[key]["agency"])].append(i)
    reposts: list[float] = []
    others: list[tuple[float, str, str]] = []
    for members in by_employer.values():
        d = 1.0 - vectors[members] @ vectors[members].T
        for a, i in enumerate(members):
            for b in range(a + 1, len(members)):
                ta, tb = texts[keys[i]]["position_title"], texts[keys[members[b]]]["position_title"]
                if _title_key(ta) == _title_key(tb):
                    reposts.append(float(d[a, b]))
                else:
                    others.append((float(d[a, b]), ta, tb))
    _summary("  reposts, title differing in case/punctuation/spacing", reposts)
    _summary("  differently titled postings of one employer", [o[0] for o in others])
    rng = random.Random(5)
    for low, high in ((0.0, 0.01), (0.01, 0.02), (0.02, 0.03)):
        band = [o for o in others if low <= o[0] < high]
        print(f"    [{low}, {high}): {len(band)} pairs, e.g.")
        for distance, ta, tb in rng.sample(band, min(8, len(band))):
            print(f"      {distance:.4f}  {ta}  |  {tb}")


def sample_corpus(embedder: LocalEmbedder) -> None:
    listings = list(iter_sample_listings())
    texts = [
        f"{s.job_title} at {s.company_name}, {s.city_location}\n{s.description}" for s in listings
    ]
    vectors = _unit(embedder._encode_bulk(texts))
    by_company: dict[str, list[int]] = collections.defaultdict(list)
    for i, s in enumerate(listings):
        by_company[s.company_name].append(i)
    pairs: list[float] = []
    for members in by_company.values():
        d = 1.0 - vectors[members] @ vectors[members].T
        pairs.extend(
            float(d[a, b]) for a in range(len(members)) for b in range(a + 1, len(members))
        )
    print(f"Sample corpus: {len(listings)} listings")
    _summary("  two listings of one company", pairs)
    rng = random.Random(7)
    picks = rng.sample(range(len(listings)), 300)
    cities = sorted({s.city_location for s in listings})
    variants: dict[str, list[str]] = {
        "last sentence rewritten": [],
        "another city": [],
        "'Senior ' title": [],
    }
    for i in picks:
        s = listings[i]
        sentences = s.description.split(". ")
        sentences[-1] = "Apply by the end of the month; we answer every application."
        variants["last sentence rewritten"].append(
            f"{s.job_title} at {s.company_name}, {s.city_location}\n{'. '.join(sentences)}"
        )
        city = rng.choice([c for c in cities if c != s.city_location])
        variants["another city"].append(
            f"{s.job_title} at {s.company_name}, {city}\n{s.description}"
        )
        variants["'Senior ' title"].append(
            f"Senior {s.job_title} at {s.company_name}, {s.city_location}\n{s.description}"
        )
    for name, changed in variants.items():
        moved = _unit(embedder._encode_bulk(changed))
        _summary(
            f"  one posting against itself, {name}",
            [float(1.0 - vectors[i] @ moved[k]) for k, i in enumerate(picks)],
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--csv",
        type=Path,
        default=Path(os.environ.get("SHORTLIST_BENCH_RELEVANCE_CSV", DEFAULT_CSV)),
    )
    args = parser.parse_args()
    embedder = LocalEmbedder()
    usajobs(embedder, args.csv)
    sample_corpus(embedder)


if __name__ == "__main__":
    main()
