"""``shortlist worker`` and ``shortlist serve`` as real OS processes, configured through the
environment exactly as an operator would run them, with their output captured to a file."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx

from tests.helpers import environ_without_settings, loopback, wait_for_sync

ROOT = Path(__file__).resolve().parents[2]
SHORTLIST = str(Path(sys.executable).with_name("shortlist"))


def free_port() -> int:
    """A loopback port free right now (the process binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def base_env(db_url: str, data_dir: Path, **settings: object) -> dict[str, str]:
    """The process environment: this one, minus any ``SHORTLIST_*`` of the caller (but the
    harness's own, ``tests.helpers.HARNESS_SETTINGS``), plus ``settings`` as
    ``SHORTLIST_<NAME>`` variables."""
    env = environ_without_settings()
    env |= {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
        "SHORTLIST_DATABASE_URL": db_url,
        "SHORTLIST_DATA_DIR": str(data_dir),
        "SHORTLIST_LOAD_SAMPLE_DATA": "false",
    }
    for name, value in settings.items():
        env[f"SHORTLIST_{name.upper()}"] = str(value)
    return env


class ShortlistProcess:
    """One ``shortlist`` command. stdout and stderr both go to ``log_path``."""

    def __init__(self, name: str, args: list[str], env: Mapping[str, str], log_path: Path):
        self.name = name
        self.args = args
        self.env = dict(env)
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    def start(self) -> ShortlistProcess:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [SHORTLIST, *self.args],
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.started_at = time.monotonic()
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_ready(self, marker: str, count: int = 1, timeout: float = 60.0) -> None:
        """Until ``marker`` appears ``count`` times in the log (or the process dies)."""

        def ready() -> bool:
            if not self.alive:
                raise AssertionError(f"{self.name} exited early:\n{self.log()[-4000:]}")
            return self.log().count(marker) >= count

        wait_for_sync(ready, timeout=timeout, interval=0.05, message=f"{self.name}: {marker!r}")

    def kill(self) -> None:
        """SIGKILL: no cleanup of any kind runs in the process."""
        if self.proc is not None and self.alive:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def terminate(self) -> None:
        if self.proc is not None and self.alive:
            self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, then SIGKILL if it does not exit within ``timeout``."""
        if self.proc is None:
            return None
        if self.alive:
            self.terminate()
            try:
                return self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode


def start_worker(
    name: str, env: Mapping[str, str], log_dir: Path, only: str | None = None
) -> ShortlistProcess:
    args = ["worker"] + (["--only", only] if only else [])
    return ShortlistProcess(name, args, env, log_dir / f"{name}.log").start()


class ApiServer(ShortlistProcess):
    """``shortlist serve`` on a free loopback port."""

    def __init__(self, name: str, env: Mapping[str, str], log_path: Path, *, workers: bool = False):
        self.port = free_port()
        args = ["serve", "--host", "127.0.0.1", "--port", str(self.port)]
        if not workers:
            args.append("--no-workers")
        super().__init__(name, args, env, log_path)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_healthy(self, timeout: float = 60.0) -> None:
        def healthy() -> bool:
            if not self.alive:
                raise AssertionError(f"{self.name} exited early:\n{self.log()[-4000:]}")
            with contextlib.suppress(httpx.HTTPError):
                return loopback().get(self.url + "/healthz", timeout=1.0).status_code == 200
            return False

        wait_for_sync(healthy, timeout=timeout, interval=0.1, message=f"{self.name} healthy")


@contextlib.contextmanager
def stopped_at_exit(procs: list[ShortlistProcess]) -> Iterator[list[ShortlistProcess]]:
    """Whatever happens in the block, every process of ``procs`` is ended afterwards."""
    try:
        yield procs
    finally:
        for p in procs:
            p.stop(timeout=15)
