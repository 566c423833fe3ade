"""Reproducible benchmarks; each prints ratios against a baseline from the same run."""
