"""shortlist.runtime.cap_malloc_arenas: threads that allocate at once share two glibc arenas."""

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
    from shortlist.runtime import cap_malloc_arenas
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
    from shortlist.runtime import cap_malloc_arenas

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert cap_malloc_arenas() is False
