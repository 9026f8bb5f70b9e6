"""The derived-data cache (shortlist.derived): kept objects are loaded, not rebuilt; another
version of the code or arguments is another file; a torn file is rebuilt; of processes starting
at once, one builds; files of other versions go once unused for a week."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shortlist import derived
from shortlist.config import Settings


class Index:
    def __init__(self, words: list[str]) -> None:
        self.words = words


def _builder(calls: list[int], words: list[str]) -> Callable[[], tuple[Index, bytes]]:
    def build() -> tuple[Index, bytes]:
        calls.append(1)
        index = Index(words)
        return index, derived.dumps(index)

    return build


def test_a_kept_object_is_loaded_not_built_again(tmp_path: Path) -> None:
    name = derived.file_name("index", [__file__], ["psycopg"], 1, "a")
    calls: list[int] = []
    first = derived.load_or_build(tmp_path, name, Index, _builder(calls, ["x", "y"]))
    second = derived.load_or_build(tmp_path, name, Index, _builder(calls, ["other"]))
    assert calls == [1]
    assert first.words == second.words == ["x", "y"]
    assert second is not first


def test_no_folder_builds_every_time(tmp_path: Path) -> None:
    name = derived.file_name("index", [__file__], [], 1)
    calls: list[int] = []
    derived.load_or_build(None, name, Index, _builder(calls, []))
    derived.load_or_build(None, name, Index, _builder(calls, []))
    assert calls == [1, 1]
    assert list(tmp_path.iterdir()) == []


def test_another_source_argument_or_package_is_another_file(tmp_path: Path) -> None:
    source = tmp_path / "builder.py"
    source.write_text("A = 1\n")
    names = {
        derived.file_name("index", [str(source)], ["psycopg"], 1),
        derived.file_name("index", [str(source)], ["psycopg"], 2),
        derived.file_name("index", [str(source)], ["httpx"], 1),
        derived.file_name("other", [str(source)], ["psycopg"], 1),
    }
    before = derived.file_name("index", [str(source)], ["psycopg"], 1)
    source.write_text("A = 2\n")
    names.add(derived.file_name("index", [str(source)], ["psycopg"], 1))
    assert len(names) == 5
    assert before in names


def test_a_torn_or_foreign_file_is_rebuilt_and_replaced(tmp_path: Path) -> None:
    name = derived.file_name("index", [__file__], [], "torn")
    (tmp_path / name).write_bytes(derived.dumps(Index(["whole"]))[:-7])
    calls: list[int] = []
    assert derived.load_or_build(tmp_path, name, Index, _builder(calls, ["new"])).words == ["new"]
    (tmp_path / name).write_bytes(derived.dumps({"not": "an index"}))
    assert derived.load_or_build(tmp_path, name, Index, _builder(calls, ["newer"])).words == [
        "newer"
    ]
    assert calls == [1, 1]
    assert derived.read(tmp_path, name, Index) is not None
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_file_others_may_write_is_never_loaded(tmp_path: Path) -> None:
    name = derived.file_name("index", [__file__], [], "trust")
    calls: list[int] = []
    derived.load_or_build(tmp_path, name, Index, _builder(calls, ["mine"]))
    assert derived.read(tmp_path, name, Index) is not None
    (tmp_path / name).chmod(0o666)
    assert derived.read(tmp_path, name, Index) is None
    (tmp_path / name).chmod(0o600)
    tmp_path.chmod(0o777)
    try:
        assert derived.read(tmp_path, name, Index) is None
        assert derived.load_or_build(tmp_path, name, Index, _builder(calls, ["rebuilt"])).words
    finally:
        tmp_path.chmod(0o700)
    assert calls == [1, 1]


def test_an_unwritable_folder_still_builds(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    calls: list[int] = []
    index = derived.load_or_build(blocker / "cache", "x.pickle", Index, _builder(calls, ["k"]))
    assert index.words == ["k"] and calls == [1]


CHILD = """
import sys, time
from collections.abc import Callable
from pathlib import Path
from shortlist import derived
from tests.unit.test_derived import Index
folder, marks = Path(sys.argv[1]), Path(sys.argv[2])
def build():
    with marks.open("a") as f:
        f.write("built\\n")
    time.sleep(1.0)  # long enough that the other process asks while this one builds
    index = Index(["shared"])
    return index, derived.dumps(index)
print(derived.load_or_build(folder, "shared.pickle", Index, build).words[0])
"""


@pytest.mark.slow
def test_of_processes_starting_at_once_one_builds_and_the_others_load(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(tmp_path / "cache"), str(marks)],
            stdout=subprocess.PIPE,
            cwd=root,
        )
        for _ in range(3)
    ]
    outputs = [p.communicate(timeout=120)[0].decode().strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert outputs == ["shared"] * 3
    assert marks.read_text() == "built\n"


def test_what_is_loaded_or_built_is_out_of_the_collectors_walks(tmp_path: Path) -> None:
    """A full collection must not walk a kept index's objects again and again (gc.freeze)."""
    name = derived.file_name("index", [__file__], [], "frozen")
    built = derived.load_or_build(tmp_path, name, Index, _builder([], ["x", "y"]))
    loaded = derived.load_or_build(tmp_path, name, Index, _builder([], ["other"]))
    assert loaded.words == ["x", "y"] and loaded is not built
    tracked = gc.get_objects()  # every generation the collector walks, not the frozen one
    assert not any(o is built.words or o is loaded.words for o in tracked)
    assert gc.is_tracked(loaded.words)


def test_files_of_other_versions_go_once_unused_for_a_week(tmp_path: Path) -> None:
    """Written or read: used. A file of the same kind and another digest that nothing used for
    UNUSED_DAYS goes when another is written; other kinds, and recent ones, stay."""
    week = derived.UNUSED_DAYS * 86400
    old, recent, other_kind = "index-0aaa.pickle", "index-0bbb.pickle", "index-extra-0ccc.pickle"
    for name in (old, recent, other_kind):
        (tmp_path / name).write_bytes(derived.dumps(Index([name])))
        (tmp_path / f".{name}.lock").touch()
    for name in (old, other_kind):
        os.utime(tmp_path / name, (time.time() - week - 60,) * 2)
    os.utime(tmp_path / recent, (time.time() - week + 3600,) * 2)
    # Reading the recent one marks it used: it is a week younger after.
    assert derived.read(tmp_path, recent, Index) is not None
    assert (tmp_path / recent).stat().st_mtime > time.time() - 60

    name = derived.file_name("index", [__file__], [], "new")
    derived.load_or_build(tmp_path, name, Index, _builder([], ["new"]))
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(
        [name, f".{name}.lock", recent, f".{recent}.lock", other_kind, f".{other_kind}.lock"]
    )


def test_the_cache_is_the_users_unless_set_and_off_when_set_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(derived.ENV)
    assert derived.default_dir() == tmp_path / "shortlist" / "derived"
    assert Settings().cache_dir == tmp_path / "shortlist" / "derived"
    monkeypatch.setenv(derived.ENV, "")
    assert derived.default_dir() is None
    assert Settings().cache_dir is None  # not the working directory
    monkeypatch.setenv(derived.ENV, str(tmp_path / "elsewhere"))
    assert derived.default_dir() == Settings().cache_dir == tmp_path / "elsewhere"
