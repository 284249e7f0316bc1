"""Semantic facts distilled from the journal, which know when they stopped being true."""
