"""Each tier's index: chunking, the store, the FIFO writer and the watcher that keep it fresh."""
