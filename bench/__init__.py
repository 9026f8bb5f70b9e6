"""Benchmarks of shortlist against baselines measured in the same run (``python -m bench``).

See ``bench/README.md`` for what each benchmark measures and what each figure means.
"""
