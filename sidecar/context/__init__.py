"""The prompt-ready memory block: what it holds, and how it fits a budget."""
