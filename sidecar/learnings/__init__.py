"""Learnings: what an agent learned, as markdown entries ranked by prominence."""
