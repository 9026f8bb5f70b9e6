"""The process's C heap (glibc): how many malloc arenas it has, which blocks get pages of their
own, and handing its free pages back to the operating system. Every ``shortlist`` process caps
the arenas and fixes the mmap threshold first thing (``shortlist.cli``); the services of a
process trim the heap after start-up and then from time to time (``shortlist.bootstrap``)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # malloc.h


def cap_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """At most ``arenas`` glibc malloc arenas in this process, unless ``MALLOC_ARENA_MAX`` is
    set (it wins); returns whether the cap was set. Called first thing, before any thread.

    glibc gives threads that allocate at the same time arenas of their own (up to 8 per core),
    and an arena keeps the memory freed into it: the model's intra-op threads and the thread
    pool left an API process 16 MB larger (the search-http server after 1,000 searches: 305 MB,
    289 MB with two arenas), for no speed a process that waits on PostgreSQL would notice.
    The documented knob is ``MALLOC_ARENA_MAX`` (mallopt(3), ``M_ARENA_MAX``), read from the
    environment when a process starts; ``mallopt`` sets the same from inside. No-op where the
    C library has no ``mallopt`` (musl)."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None) if libc is not None else None
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, arenas))


MMAP_THRESHOLD = 128 * 1024
_M_MMAP_THRESHOLD = -3  # malloc.h


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Blocks of ``threshold`` bytes or more get pages of their own (mmap), handed back when
    freed, unless ``MALLOC_MMAP_THRESHOLD_`` is set (it wins); returns whether it was set.
    Called first thing, with :func:`cap_malloc_arenas`.

    glibc starts at 128 kB but raises the threshold to the size of each such block freed (up to
    32 MB): after the first few, the model's activations and the answers' JSON come from the
    heap, whose freed middle stays resident until a trim. Setting it (mallopt(3),
    ``M_MMAP_THRESHOLD``) turns that adjustment off: the search-http server after 1,100
    searches, 303 MB → 295 MB (bench/README.md, search-http)."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None) if libc is not None else None
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))


HEAP_TRIM_EVERY = 30.0
"""Seconds between two :func:`trim_heap` calls of a process's services (shortlist.bootstrap)."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library, looked up once (find_library runs ``ldconfig -p`` in a subprocess)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def trim_heap() -> bool:
    """Hand the free pages inside glibc's heap back to the operating system (malloc_trim(3));
    returns whether any were. Freed memory otherwise stays the process's: building the
    gazetteer and loading the model leave ~25 MB of it in an API process, and serving adds
    more (the search-http server after 1,000 searches: 298 MB, 279 MB trimmed after start-up
    and every :data:`HEAP_TRIM_EVERY` seconds; 290 → 260 MB at start). It takes the heap's
    lock for a few milliseconds. No-op where the C library has no ``malloc_trim`` (musl)."""
    libc = _libc()
    trim = getattr(libc, "malloc_trim", None) if libc is not None else None
    if trim is None:
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return bool(trim(0))
