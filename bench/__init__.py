"""Benchmark suite for the memory sidecar: ``python -m bench --locomo DIR``.

Measurements, not tests: each benchmark prints its figures beside their targets.
Benchmarks: locomo (retrieval quality), latency, indexing, freshness, memory.
"""
