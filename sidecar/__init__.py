"""Memory Sidecar: a per-container memory daemon for LLM agents."""

import os

# Before numpy loads: a search's matrix-vector product must not fan out over every
# core (it is faster on one at our sizes), and the tokenizer must not start a pool.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
