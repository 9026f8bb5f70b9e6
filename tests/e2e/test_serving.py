"""An API process as scale-out runs it (``shortlist serve --no-workers``): its searches embed
queries through ONNX Runtime (the graph ``make install`` exported into the model cache), it
never loads PyTorch, it stays small, and a repeated query is a cache hit in ``/metrics``."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest

from tests.helpers import environ_without_settings, loopback, wait_for_sync

ROOT = Path(__file__).resolve().parents[2]
SHORTLIST = str(Path(sys.executable).with_name("shortlist"))
RSS_LIMIT = 360 * 2**20
"""A guard, not the target: ~320 MB measured here (705 MB with PyTorch, 820 MB with the bundled
simulator's population; the issue's target of 300 MB after 1,000 searches is measured by
bench/bench_search_http.py)."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


@pytest.mark.slow
@pytest.mark.parametrize("vendors", ["elsewhere", "unset"])
def test_an_api_process_without_workers_loads_no_torch(
    db_url: str, tmp_path: Path, vendors: str
) -> None:
    """With the vendors' URLs unset (the embedded default) as with them set, the API-only
    process starts no bundled simulator (its workers, elsewhere, start their own): no
    simulated population in its memory."""
    port = _free_port()
    env = environ_without_settings()
    env |= {
        "SHORTLIST_DATABASE_URL": db_url,
        "SHORTLIST_DATA_DIR": str(tmp_path),
        "SHORTLIST_LOAD_SAMPLE_DATA": "false",
        "SHORTLIST_SEARCH_RATE_LIMIT": "0",
        "SHORTLIST_LOG_LEVEL": "WARNING",
    }
    if vendors == "elsewhere":  # as a scale-out API process: not the bundled simulator
        env |= {
            "SHORTLIST_TALENT_API_URL": "http://127.0.0.1:9",
            "SHORTLIST_SERP_API_URL": "http://127.0.0.1:9",
        }
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [SHORTLIST, "serve", "--no-workers", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    base = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            assert proc.poll() is None, log.read_text()
            try:
                return loopback().get(f"{base}/readyz", timeout=2).is_success
            except httpx.HTTPError:
                return False

        wait_for_sync(ready, timeout=120, message="serve --no-workers ready")
        with httpx.Client(base_url=base, timeout=30) as client:
            for q in ("Software Engineer", "nurse", "software  engineer"):
                assert client.get("/api/jobs/search", params={"q": q}).status_code == 200
            metrics = client.get("/metrics").text
        assert _metric(metrics, 'shortlist_query_cache_lookups_total{result="hit"}') == 1
        assert _metric(metrics, 'shortlist_query_cache_lookups_total{result="miss"}') == 2
        assert _metric(metrics, "shortlist_query_cache_hit_ratio") == pytest.approx(1 / 3)

        process = psutil.Process(proc.pid)
        mapped = {m.path for m in process.memory_maps()}
        assert any("onnxruntime" in path for path in mapped)
        assert not [path for path in mapped if "torch" in path], "torch loaded"
        assert process.memory_info().rss < RSS_LIMIT
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=90)
    assert proc.returncode == 0, log.read_text()
