"""Start-up as an operator meets it: settings that contradict each other, a port that is taken,
two instances side by side, and the embedded PostgreSQL that shortlist operates (the rules of
the settings themselves: tests/unit/test_settings.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from shortlist.db.embedded import EmbeddedServer
from tests.helpers import environ_without_settings, loopback, wait_for_sync

ROOT = Path(__file__).resolve().parents[2]
SHORTLIST = str(Path(sys.executable).with_name("shortlist"))


def _env(data_dir: Path, **settings: object) -> dict[str, str]:
    env = environ_without_settings()
    env |= {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "SHORTLIST_DATA_DIR": str(data_dir),
        "SHORTLIST_LOAD_SAMPLE_DATA": "false",
    }
    env |= {f"SHORTLIST_{k.upper()}": str(v) for k, v in settings.items()}
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _postmaster_running(data_dir: Path) -> bool:
    pid_file = data_dir / "pgdata" / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().splitlines()[0])
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# --- settings ----------------------------------------------------------------------------------


def test_a_contradiction_ends_the_command_with_one_line_and_exit_2(tmp_path: Path) -> None:
    env = _env(tmp_path, stale_after=20, lease_seconds=30)
    done = subprocess.run(
        [SHORTLIST, "worker"], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "SHORTLIST_STALE_AFTER=20" in lines[0] and "SHORTLIST_LEASE_SECONDS=30" in lines[0]
    assert "Traceback" not in done.stdout + done.stderr
    assert not (tmp_path / "pgdata").exists(), "nothing may start before the settings are read"


# --- ports and side-by-side instances -------------------------------------------------------------


def test_a_taken_api_port_ends_serve_at_once_and_starts_no_database(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        began = time.monotonic()
        done = subprocess.run(
            [SHORTLIST, "serve", "--port", str(port)],
            env=_env(tmp_path / "data"),
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
    assert time.monotonic() - began < 10
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"127.0.0.1:{port}" in lines[0] and "already in use" in lines[0]
    assert not _postmaster_running(tmp_path / "data")


@pytest.mark.slow
def test_two_serves_with_default_settings_run_side_by_side(tmp_path: Path) -> None:
    procs: list[subprocess.Popen[bytes]] = []
    logs = [tmp_path / f"serve-{i}.log" for i in range(2)]
    ports = [_free_port(), _free_port()]
    try:
        for i, port in enumerate(ports):
            with logs[i].open("wb") as log:
                procs.append(
                    subprocess.Popen(
                        [SHORTLIST, "serve", "--port", str(port)],
                        # Default settings, but a small simulator population: its size has
                        # nothing to do with ports and data dirs (50,000 people: ~10 s of CPU
                        # each to build).
                        env=_env(tmp_path / f"data-{i}", simulator_population=500),
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        cwd=ROOT,
                    )
                )

        def ready(i: int) -> bool:
            assert procs[i].poll() is None, logs[i].read_text()
            try:
                return loopback().get(f"http://127.0.0.1:{ports[i]}/readyz", timeout=2).is_success
            except httpx.HTTPError:
                return False

        for i in range(2):
            wait_for_sync(lambda i=i: ready(i), timeout=120, message=f"serve {i} ready")
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=90)
    assert [p.returncode for p in procs] == [0, 0], [log.read_text() for log in logs]
    for i in range(2):
        assert not _postmaster_running(tmp_path / f"data-{i}")


# --- the embedded PostgreSQL ------------------------------------------------------------------


def _postmaster_pid(server: EmbeddedServer) -> int:
    return int((server.pgdata / "postmaster.pid").read_text().splitlines()[0])


def test_a_killed_embedded_server_is_restarted_with_everything_committed(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path, delete_on_close=True)
    try:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (n int)")
            conn.execute("INSERT INTO kept SELECT generate_series(1, 100)")
        assert server.ensure_running() is False  # alive: nothing to do
        killed = _postmaster_pid(server)
        os.kill(killed, signal.SIGKILL)

        def answering() -> int | None:
            try:
                server.ensure_running()  # as the supervisor calls it, until it sticks
                with psycopg.connect(server.url(), autocommit=True) as conn:
                    row = conn.execute("SELECT count(*) FROM kept").fetchone()
            except Exception:
                return None  # its orphaned backends may hold shared memory a moment longer
            return None if row is None else int(row[0])

        assert wait_for_sync(answering, timeout=60, message="embedded server restarted") == 100
        assert _postmaster_pid(server) != killed
    finally:
        server.close()


def test_the_last_live_holder_stops_the_server_even_when_others_were_killed(
    tmp_path: Path,
) -> None:
    server = EmbeddedServer(tmp_path)
    # A process that shared the data dir and was SIGKILLed: its pid stays in the holders' list.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    holders = server.pgdata / ".handle_pids.json"
    holders.write_text(json.dumps([*json.loads(holders.read_text()), dead.pid]))
    assert _postmaster_running(tmp_path)
    server.close()
    assert not _postmaster_running(tmp_path)


def test_the_embedded_server_runs_with_the_shared_buffers_it_is_given(tmp_path: Path) -> None:
    # PostgreSQL's 128 MB default is set in the data dir and the server restarted for it (this
    # process is its only holder); asked again, nothing changes.
    server = EmbeddedServer(tmp_path, delete_on_close=True, shared_buffers="48MB")
    try:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            row = conn.execute("SHOW shared_buffers").fetchone()
        assert row is not None and row[0] == "48MB"
        pid = _postmaster_pid(server)
        assert server.keep_shared_buffers("48MB") is True
        assert _postmaster_pid(server) == pid
    finally:
        server.close()
