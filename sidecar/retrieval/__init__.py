"""Search: query planning, BM25 and dense legs, fusion, embeddings, across tiers and the lead."""
