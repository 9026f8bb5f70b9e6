"""The local model through ONNX Runtime: the exported graph gives the PyTorch
(sentence-transformers) vectors, within 1e-4 cosine, alone and in padded mini-batches."""

from __future__ import annotations

import os

import numpy as np
import pytest

from shortlist.embedding.local import LocalEmbedder
from shortlist.embedding.onnx_model import (
    OnnxModel,
    default_cache_dir,
    default_model_path,
    ensure_graph,
    graph_path,
    max_seq_length,
)

TEST_SET = [
    "python backend engineer",
    "Nurse",
    "remote",
    "software engineer",
    "Senior Software Engineer (Platform) — Django, FastAPI, PostgreSQL; Berlin or remote",
    "Registered Nurse, ICU night shift. Provide patient care, administer medication and work"
    " with physicians at a city hospital.",
    "Développeur·se full-stack à Paris, télétravail partiel, 45–55 k€",
    "東京のバックエンドエンジニア Go / Kubernetes",
    "Lagerist:in (m/w/d) in Vollzeit, Staplerschein erwünscht",
    "C++ / C# / .NET developer!!! ??? $$$",
    "a",
    # Longer than the model's 256 word pieces: both sides truncate the same way.
    "We are hiring a data engineer to build pipelines in Airflow and Spark. " * 40,
    "machine learning platform lead, " * 12,
]


@pytest.mark.slow
def test_onnx_vectors_equal_the_pytorch_ones() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    model_path = default_model_path()
    # The graph the product runs: exported by `make install` (or here, in a child process,
    # from the packaged weights, if it is missing).
    graph = ensure_graph(default_cache_dir(), model_path)
    assert graph == graph_path(default_cache_dir(), model_path)
    assert graph.stat().st_size > 50_000_000
    assert max_seq_length(model_path) == 256

    reference = SentenceTransformer(str(model_path), device="cpu")
    expected = reference.encode(TEST_SET, normalize_embeddings=True, convert_to_numpy=True)
    onnx = OnnxModel(graph, model_path)
    # One batch (padded to the longest text), and each text alone (no padding).
    together = onnx.encode(TEST_SET)
    alone = np.vstack([onnx.encode([text]) for text in TEST_SET])
    for got in (together, alone):
        assert got.shape == (len(TEST_SET), 384)
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
        cosines = (got * expected).sum(axis=1)
        assert cosines.min() > 1 - 1e-4, dict(zip(TEST_SET, cosines.tolist(), strict=True))


@pytest.mark.slow
async def test_local_embedder_small_and_bulk_calls_agree() -> None:
    """The product's embedder (the graph in the model cache): small calls on the query copy,
    big ones on the bulk copy, the same vectors either way."""
    embedder = LocalEmbedder(batch_size=4, bulk_batch_size=4)
    embedder.warm_up()
    bulk = np.array(await embedder.embed(TEST_SET))  # > 4 texts: the bulk copy, mini-batches
    for i, text in enumerate(TEST_SET):
        [small] = await embedder.embed([text])
        assert float(np.dot(small, bulk[i])) > 1 - 1e-5, text
