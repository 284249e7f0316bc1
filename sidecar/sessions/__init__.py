"""Sessions: a start that answers the memory block, an end that promotes, summarises and teaches."""
