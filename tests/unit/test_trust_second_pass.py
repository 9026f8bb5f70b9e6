"""Trust, second pass (issue 36), the parts that need no database: a linear log redactor cut
before it runs, brief parsing with one compiled matcher, the ONNX graph loaded only from a cache
this user alone can write, and source specs shown without credentials."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shortlist.embedding.onnx_model import default_model_path, ensure_graph, graph_path
from shortlist.errors import ConfigError
from shortlist.redact import redact_emails
from shortlist.status import spec_shown
from shortlist.talent import brief
from shortlist.talent.brief import find_role, find_skills

# --- point 13: the redactor ------------------------------------------------------------------


def test_the_redactor_is_linear_in_a_long_run_without_spaces() -> None:
    # 400 KB without a space or an @: the address pattern tried at every position scanned the
    # rest of the run each time (40 KB: 2.6 s, so 400 KB: minutes). A deadline, not a timing:
    # linear, it takes a fraction of a second even on a loaded machine.
    code = (
        "from shortlist.redact import redact_emails, redact_person_ids\n"
        "for t in ('x' * 400_000, 'a@' + 'b' * 400_000, 'a@' * 200_000):\n"
        "    redact_person_ids(redact_emails(t))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, timeout=60, check=False)
    assert done.returncode == 0


def test_the_redactor_still_finds_every_address_and_is_cut_first() -> None:
    text = "from jane.doe@example.com, cc <bob@x.org>; mary.jane@example.com.au"
    assert redact_emails(text) == "from [e-mail], cc <[e-mail]>; [e-mail]"
    # Cut at the limit, before the work: an address the limit cuts is still redacted whole.
    long = "y" * 10 + " jane@example.com " + "z" * 100_000
    assert redact_emails(long, 14) == "y" * 10 + " [e-"
    assert len(redact_emails("q" * 100_000, 50)) == 50


# --- point 14: one compiled matcher ------------------------------------------------------------


def test_brief_parsing_compiles_one_matcher_per_vocabulary(monkeypatch: Any) -> None:
    vocabulary = [f"skill{i}" for i in range(2000)] + ["Python", "Machine Learning", "Learning"]
    text = "Senior machine learning engineer with python and skill1999, not skill20000"
    assert find_skills(text, vocabulary, "Engineer") == (
        "Machine Learning",
        "Learning",
        "Python",
        "skill1999",
    )
    assert find_role("FPGA verification engineer in Munich") == "FPGA Verification Engineer"
    compiled: list[object] = []
    real = re._compile  # type: ignore[attr-defined]

    def counting(pattern: Any, flags: Any) -> Any:
        compiled.append(pattern)
        return real(pattern, flags)

    monkeypatch.setattr(re, "_compile", counting)
    # A pattern per skill (2,000 of them, past re's cache of 512) took 68-109 ms per brief.
    assert find_skills(text, vocabulary, "Engineer")[0] == "Machine Learning"
    assert find_role("FPGA verification engineer in Munich") == "FPGA Verification Engineer"
    assert compiled == []
    brief._matcher.cache_clear()
    find_skills(text, vocabulary, None)
    assert len(compiled) == 1


# --- point 10: the model cache ---------------------------------------------------------------


def test_the_onnx_graph_is_loaded_only_from_a_cache_this_user_alone_can_write(
    tmp_path: Path,
) -> None:
    model = default_model_path()
    graph = graph_path(tmp_path, model)
    graph.parent.mkdir(mode=0o700)
    graph.write_bytes(b"not a graph anyone checked")
    graph.chmod(0o666)  # anyone may replace what ONNX Runtime would run
    with pytest.raises(ConfigError, match="not this user's alone"):
        ensure_graph(tmp_path, model)
    graph.chmod(0o644)
    graph.parent.chmod(0o777)  # anyone may swap the file itself
    with pytest.raises(ConfigError, match="not this user's alone"):
        ensure_graph(tmp_path, model)
    graph.parent.chmod(0o700)
    assert ensure_graph(tmp_path, model) == graph


# --- point 15: source specs without credentials --------------------------------------------


def test_a_source_spec_is_shown_without_its_credentials() -> None:
    assert spec_shown("https://bot:s3cret@careers.example/jobs?token=t0k#top") == (
        "https://careers.example/jobs"
    )
    assert spec_shown("greenhouse:acme") == "greenhouse:acme"
