"""Notes an agent writes and reads: allowed files and caps, durable indexed writes, reads."""
