"""Lifecycle: the maintenance engine that keeps each tier bounded (archive, retain, consolidate)."""
