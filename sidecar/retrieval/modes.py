"""The retrieval modes a search may ask for: BM25 and vectors, BM25 only, vectors only.

A module of its own so the ranking and the fusion (which loads numpy) can both
name them without importing each other; the journal's ranking mixes its legs with
the fusion's constants, also without loading numpy.
"""

HYBRID, SPARSE, DENSE = "hybrid", "sparse", "dense"
MODES = (HYBRID, SPARSE, DENSE)

# The dense leg's share when it re-orders BM25's pool (see ``fusion``).
ALPHA = 0.5
# A dense hit joins a journal or facts recall pool on the dense leg alone only when it is
# this similar to the query: below it MiniLM pairs are unrelated (a bare date heading
# scores 0.06 against a question about databases). Events and facts are one sentence each,
# and a right answer sharing no word with the question can score 0.22 to 0.28.
FILL_MIN_COSINE = 0.2
# A note chunk (about 290 characters) fills a short BM25 list only from this cosine. Such a
# hit shares no word with the question, so it must be clearly related to earn its budget.
# Measured on LoCoMo dev (whole-chunk cosine, 760 questions): the best chunk of a
# *different* conversation, memory that cannot answer, reaches 0.2 for 96% of questions,
# 0.3 for 66%, 0.4 for 21%, while the best chunk of the question's own conversation
# reaches 0.3 for 99.8%. "Who got a dog?" against a note that Alice adopted a puppy scores
# 0.33 to 0.42; "redis eviction" against notes on commit style 0.24. Fills happen for 4 of
# 760 LoCoMo questions: 0.2, 0.3 and 0.35 score the same.
NOTES_FILL_MIN_COSINE = 0.3
POOL = 20  # BM25 candidates the dense leg re-orders (``fusion.rerank``)
# The BM25 weight of a chunk's neighbouring text when BM25 ranks alone (sparse mode, or no
# embedder): every leave-one-conversation-out fold on LoCoMo dev chose it over the 0.5 the
# hybrid pool needs (0.772 against 0.762 cross-validated, four of five conversations up).
SPARSE_CONTEXT_WEIGHT = 0.25
# What a candidate that places something in time gains, in shares of the pool's best
# score, when the question asks when (``query.asks_when``, ``dates.says_when``): the
# answer to "when did" is a line saying when. Cross-validated on LoCoMo dev (README,
# "Validated on conversations a choice was not made on").
WHEN_SHARE = 0.1
# What a candidate whose transcript lines are all said by someone the question names gains,
# in the same shares (a chunk gains this times the share of its lines they say,
# ``speakers``): "What has Melanie painted?" is answered by Melanie's own lines.
SPEAKER_SHARE = 0.1
