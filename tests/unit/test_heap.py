"""shortlist.heap: threads that allocate at once share two glibc arenas once capped; a trim
hands the free pages inside the heap back to the operating system."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# A child process: threads allocating at the same time, then glibc's own account of its heaps
# (malloc_info(3): one <heap nr=...> element per arena).
CHILD = r"""
import ctypes, ctypes.util, os, re, sys, tempfile, threading
if sys.argv[1] == "capped":
    from shortlist.heap import cap_malloc_arenas
    assert cap_malloc_arenas()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
barrier = threading.Barrier(8)
def work():
    barrier.wait()
    kept = [bytearray(4096) for _ in range(2000)]
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc.fdopen.restype = ctypes.c_void_p
libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
with tempfile.TemporaryFile() as f:
    fp = libc.fdopen(os.dup(f.fileno()), b"w")
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    f.seek(0)
    print(len(re.findall(rb"<heap nr=", f.read())))
"""


def _arenas(mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, env=env, check=True
    )
    return int(done.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_info")
def test_threads_allocating_at_once_share_two_arenas_once_capped() -> None:
    assert _arenas("default") > 2
    assert _arenas("capped") <= 2


def test_an_operators_malloc_arena_max_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    from shortlist.heap import cap_malloc_arenas

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert cap_malloc_arenas() is False


# A child process: 200 MB of 4 kB blocks on the heap, one more block after them (so the freed
# ones are not at the heap's top, which glibc gives back by itself), all but that one freed;
# then the resident size before and after a trim.
TRIM_CHILD = r"""
import psutil
from shortlist.heap import trim_heap
me = psutil.Process()
blocks = [bytearray(4096) for _ in range(50_000)]
pin = bytearray(4096)
del blocks
before = me.memory_info().rss
trimmed = trim_heap()
print(trimmed, (before - me.memory_info().rss) // 2**20)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_a_trim_hands_freed_heap_memory_back() -> None:
    done = subprocess.run(
        [sys.executable, "-c", TRIM_CHILD], capture_output=True, text=True, check=True
    )
    trimmed, released_mb = done.stdout.split()
    assert trimmed == "True"
    assert int(released_mb) > 100, done.stdout


# A child process: one 2 MB block freed (glibc then raises its threshold to 2 MB), then 30 blocks
# of 1.5 MB and one more, all but the last freed; how much of them stays resident.
MMAP_CHILD = r"""
import sys, psutil
if sys.argv[1] == "fixed":
    from shortlist.heap import fix_mmap_threshold
    assert fix_mmap_threshold()
me = psutil.Process()
first = bytearray(2 * 2**20)
del first
before = me.memory_info().rss
blocks = [bytearray(3 * 2**19) for _ in range(30)]
pin = bytearray(3 * 2**19)
del blocks
print((me.memory_info().rss - before) // 2**20)
"""


def _kept_mb(mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run(
        [sys.executable, "-c", MMAP_CHILD, mode],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return int(done.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_large_blocks_are_handed_back_once_the_mmap_threshold_is_fixed() -> None:
    assert _kept_mb("default") >= 30
    assert _kept_mb("fixed") <= 5


def test_an_operators_mmap_threshold_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    from shortlist.heap import fix_mmap_threshold

    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert fix_mmap_threshold() is False
