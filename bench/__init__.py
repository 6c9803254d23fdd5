"""Benchmarks (not tests): each script prints its figures and ratios in one run.

Run from the repository root: ``.venv/bin/python -m bench.turns`` and
``.venv/bin/python -m bench.paused_memory`` (or ``python bench/turns.py`` etc.).
"""
