"""Derived data kept between processes: indexes a process builds at start-up from packaged data
and code alone (the gazetteer, shortlist.places; the bundled simulator's population,
shortlist.simulator), pickled into ``SHORTLIST_CACHE_DIR`` so the next process loads them
instead of building them again.

A file's name is a digest of everything its contents are a function of: the source files of
the modules that build it, the versions of the packages whose data it reads, the build's own
arguments, Python's version and the pickle protocol. Another version of any of them reads and
writes another file, so no process ever loads what different code built. Files are written
whole and renamed into place (a concurrent reader sees all of one or none) and only ever read by
this code, and only from a folder and file owned by this user and writable by nobody else. Of
several processes starting at once, one builds a missing file (under a lock beside it) and the
others wait for it and load it.

The cache only saves time: a missing, unreadable or unwritable file means building, and a
warning. ``SHORTLIST_CACHE_DIR`` unset: the user's cache directory (``~/.cache/shortlist/derived``
on Linux, beside the model's ONNX graph); set but empty: no cache, every process builds its own.

Files another version wrote are removed once nothing has read them for
:data:`UNUSED_DAYS` (a read marks a file used), when a file of the same kind is written: two
checkouts or installs side by side each keep theirs, and old versions do not pile up (the
simulator's population is ~60 MB a version).
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import hashlib
import importlib.metadata
import logging
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

import platformdirs

log = logging.getLogger(__name__)

T = TypeVar("T")

ENV = "SHORTLIST_CACHE_DIR"
PROTOCOL = pickle.HIGHEST_PROTOCOL
UNUSED_DAYS = 7.0
"""A cache file of another version nothing read for this long is removed (see above)."""


def user_dir() -> Path:
    """Where the cache is when ``SHORTLIST_CACHE_DIR`` is unset."""
    return Path(platformdirs.user_cache_dir("shortlist", appauthor=False)) / "derived"


def default_dir() -> Path | None:
    """The cache folder ``SHORTLIST_CACHE_DIR`` names (``Settings.cache_dir`` reads the same
    variable): :func:`user_dir` when it is unset, None (no cache) when it is empty."""
    configured = os.environ.get(ENV)
    if configured is None:
        return user_dir()
    return Path(configured) if configured.strip() else None


def file_name(kind: str, sources: Iterable[str], packages: Iterable[str], *args: object) -> str:
    """The cache file of ``kind`` built by the modules at ``sources`` (their files' bytes) from
    the data of ``packages`` (their installed versions) with ``args``."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(Path(source).read_bytes())
    for package in packages:
        digest.update(f"{package}=={importlib.metadata.version(package)};".encode())
    digest.update(f"{args!r};{sys.version_info[:2]};{PROTOCOL}".encode())
    return f"{kind}-{digest.hexdigest()[:20]}.pickle"


def read(folder: Path | None, name: str, kind: type[T]) -> T | None:
    """The object kept in ``folder/name``, if there is one of type ``kind``."""
    if folder is None:
        return None
    path = folder / name
    try:
        with path.open("rb") as f:
            if not trusted(folder.stat()) or not trusted(os.fstat(f.fileno())):
                log.warning(
                    "cache file %s or its folder is not this user's alone (owner, or writable by "
                    "others); building instead of loading it",
                    path,
                )
                return None
            data = f.read()
            with contextlib.suppress(OSError):
                os.utime(f.fileno())  # used: not removed as unused (prune)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cache file %s unreadable (%s); building", path, exc)
        return None
    # Tens of thousands of small objects: the cyclic collector would walk them all, repeatedly,
    # while they are made (it made loading the simulator's population ~3x slower).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        kept = pickle.loads(data)  # written by write() below, named after this code
    except Exception as exc:  # a torn or foreign file: build again (and replace it)
        log.warning("cache file %s unreadable (%r); building", path, exc)
        return None
    finally:
        if was_enabled:
            gc.enable()
    return kept if isinstance(kept, kind) else None


def trusted(stat: os.stat_result) -> bool:
    """Owned by this process's user and writable by nobody else: only then is a pickle loaded
    (loading one runs whatever its writer put in it)."""
    return stat.st_uid == os.getuid() and not stat.st_mode & 0o022


def write(folder: Path | None, name: str, data: bytes) -> None:
    """Keep pickled ``data`` as ``folder/name``: a file of its own first, then renamed."""
    if folder is None:
        return
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        log.warning("cache file not written to %s (%s)", folder, exc)
        return
    prune(folder, name)


def prune(folder: Path, kept: str, unused_days: float = UNUSED_DAYS) -> list[str]:
    """Remove the files of ``kept``'s kind (its name up to the digest, and its suffix) other than
    ``kept`` that nothing has read or written for ``unused_days``, and their lock files; the
    names removed. A process still using one has loaded it already; a process of that version
    starting later builds it again. (shortlist.embedding.onnx_model prunes its graphs so too.)"""
    stem, suffix = os.path.splitext(kept)
    kind = stem.rsplit("-", 1)[0]
    cutoff = time.time() - unused_days * 86400
    removed: list[str] = []
    for path in folder.glob(f"{kind}-*{suffix}"):
        if path.name == kept or path.stem.rsplit("-", 1)[0] != kind:
            continue
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()
                (folder / f".{path.name}.lock").unlink(missing_ok=True)
                removed.append(path.name)
    return removed


def dumps(obj: object) -> bytes:
    return pickle.dumps(obj, protocol=PROTOCOL)


@contextlib.contextmanager
def _building(folder: Path, name: str) -> Iterator[None]:
    """Held while ``name`` is built: an exclusive lock on a file beside it (released by the
    kernel if the builder dies). No lock (an unwritable folder): build without one."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(folder / f".{name}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def load_or_build(
    folder: Path | None, name: str, kind: type[T], build: Callable[[], tuple[T, bytes]]
) -> T:
    """The ``kind`` kept as ``folder/name``; else ``build()`` (the object and its pickle),
    kept there for the next process. One process builds; others starting meanwhile wait.
    Either way the object is kept out of the cyclic collector's reach (:func:`_settle`)."""
    return _settle(_load_or_build(folder, name, kind, build))


def _load_or_build(
    folder: Path | None, name: str, kind: type[T], build: Callable[[], tuple[T, bytes]]
) -> T:
    if folder is None:
        return build()[0]
    kept = read(folder, name, kind)
    if kept is not None:
        return kept
    with _building(folder, name):
        kept = read(folder, name, kind)  # built by another process while this one waited
        if kept is not None:
            return kept
        built, data = build()
        write(folder, name, data)
        return built


def _settle(obj: T) -> T:
    """What is derived here lives as long as the process and is never changed: its objects
    (a million for the simulator's population) move to the collector's permanent generation
    (``gc.freeze``), or every full collection would walk them all again (~1 s of CPU each,
    many times over a process's life). Everything else the process holds at that moment is
    moved with it; it is still freed when its last reference goes, only a reference cycle
    among it would never be collected."""
    gc.freeze()
    return obj
