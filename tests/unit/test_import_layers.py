"""Every top-level module of shortlist has a place in the import layers (pyproject.toml,
[tool.importlinter]): a package left out of the layers contract could import anything, and
lint-imports would not say so."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path

import shortlist

ROOT = Path(__file__).resolve().parents[2]


def test_every_top_level_module_is_in_a_layer() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    [layers] = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    named = {
        name.strip()
        for layer in layers["layers"]
        for name in layer.replace(":", "|").split("|")
        if name.strip()
    }
    modules = {m.name for m in pkgutil.iter_modules(shortlist.__path__)}
    assert modules - named == set(), "add these to [tool.importlinter]'s layers"
    assert named - modules == set(), "layers name modules that do not exist"
