"""The reliability and security proofs: real ``shortlist`` processes against a real PostgreSQL.

* ``procs`` — ``shortlist worker`` / ``shortlist serve`` as OS processes (SIGKILL, SIGTERM).
* ``providers`` — misbehaving providers: an OpenAI-compatible embedder failing at a set rate,
  and the talent-API simulator with a request log (for Retry-After and call-count checks).
* ``checks`` — the invariants read from the database afterwards, and the log scan for e-mail
  addresses and tokens.
* ``scenarios`` — worker crashes, a database restart, provider chaos, graceful stop; each runs
  at a ``Profile`` (``REDUCED`` inside ``make test``, ``FULL`` for ``make chaos``) and returns
  its figures.
* ``fuzz`` — schemathesis over the app's OpenAPI schema, in-process over ASGI.
* ``suite`` — the full-size pytest module; ``python -m tests.chaos`` (``make chaos``) runs it
  together with the access-control and bad-input tests and prints every figure at the end.

The reduced versions live in ``tests/e2e/test_reliability.py`` and ``tests/e2e/test_fuzz_api.py``.
"""
