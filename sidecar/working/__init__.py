"""Working memory: short-lived entries promoted to episodes by a sleep pass."""
