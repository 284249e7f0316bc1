"""The retrieval modes a search may ask for: BM25 and vectors, BM25 only, vectors only.

A module of its own so the ranking and the fusion (which loads numpy) can both
name them without importing each other; the journal's ranking mixes its legs with
the fusion's constants, also without loading numpy.
"""

HYBRID, SPARSE, DENSE = "hybrid", "sparse", "dense"
MODES = (HYBRID, SPARSE, DENSE)

# The dense leg's share when it re-orders BM25's pool (see ``fusion``).
ALPHA = 0.5
# A dense hit only fills a short BM25 list when it is this similar to the query: below it,
# MiniLM pairs are unrelated (a bare date heading scores 0.06 against a question about
# databases; "who got a dog?" against "adopted a puppy" scores 0.33). On LoCoMo, fills
# happen for 4 of 760 questions and this floor changes no figure.
FILL_MIN_COSINE = 0.2
POOL = 20  # BM25 candidates the dense leg re-orders (``fusion.rerank``)
# The BM25 weight of a chunk's neighbouring text when BM25 ranks alone (sparse mode, or no
# embedder): every leave-one-conversation-out fold on LoCoMo dev chose it over the 0.5 the
# hybrid pool needs (0.772 against 0.762 cross-validated, four of five conversations up).
SPARSE_CONTEXT_WEIGHT = 0.25
