"""``shortlist sources …`` in-process (typer's CliRunner); a crawl killed by SIGKILL in a real
process is end-to-end (tests/e2e/test_crawl_kill.py)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shortlist.cli import build_app
from shortlist.config import get_settings
from tests.job_boards import (
    FakeBoards,
    board_env,
    greenhouse_job,
)


def test_sources_commands(db_url: str, boards: FakeBoards, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in board_env(db_url, boards).items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    boards.greenhouse["clidemo"] = {
        "name": "CLI Demo",
        "jobs": [greenhouse_job(1, "Cartographer", "Lisbon", "<p>Maps.</p>")],
    }
    runner = CliRunner()
    app = build_app()

    added = runner.invoke(app, ["sources", "add", "greenhouse:clidemo", "--company", "Maps Ltd"])
    assert added.exit_code == 0, added.output
    source_id = int(added.stdout.strip().splitlines()[-1])  # the id alone on the last line

    bad = runner.invoke(app, ["sources", "add", "nonsense"])
    assert bad.exit_code == 1 and "greenhouse:TOKEN" in bad.output

    crawled = runner.invoke(app, ["sources", "crawl", str(source_id)])
    assert crawled.exit_code == 0, crawled.output
    assert "1 new" in crawled.stdout

    listed = runner.invoke(app, ["sources", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    [entry] = json.loads(listed.stdout)
    assert (entry["id"], entry["spec"], entry["company_name"]) == (
        source_id,
        "greenhouse:clidemo",
        "Maps Ltd",
    )
    assert entry["listings_open"] == 1 and entry["status"] == "active"
    assert entry["last_outcome"]["new"] == 1

    everything = runner.invoke(app, ["sources", "crawl", "--all"])
    assert everything.exit_code == 0 and "1 unchanged" in everything.stdout

    status = runner.invoke(app, ["status", "--json"])
    assert status.exit_code == 0
    [shown] = json.loads(status.stdout)["job_sources"]
    assert shown["spec"] == "greenhouse:clidemo" and shown["listings_open"] == 1

    removed = runner.invoke(app, ["sources", "remove", str(source_id)])
    assert removed.exit_code == 0
    again = runner.invoke(app, ["sources", "remove", str(source_id)])
    assert again.exit_code == 1
    assert json.loads(runner.invoke(app, ["sources", "list", "--json"]).stdout) == []
    get_settings.cache_clear()
