"""Benchmark suite for the memory sidecar: ``python -m bench --locomo DIR``.

Measurements, not tests: each benchmark prints its figures beside their targets.
Benchmarks built on the LoCoMo data are skipped, with one line, when it is absent.
"""
