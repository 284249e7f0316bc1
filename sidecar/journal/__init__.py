"""Episodic memory: a durable journal of events, recalled by meaning, importance and time."""
