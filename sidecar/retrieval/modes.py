"""The retrieval modes a search may ask for: BM25 and vectors, BM25 only, vectors only.

A module of its own so the ranking and the fusion (which loads numpy) can both
name them without importing each other.
"""

HYBRID, SPARSE, DENSE = "hybrid", "sparse", "dense"
MODES = (HYBRID, SPARSE, DENSE)
