"""The scanner's verdicts, remembered by content.

The same texts are scanned again and again: the memory block's files on every
prompt, the chunks a search keeps returning. The intent rules cost about a
quarter of a millisecond per kilobyte, a content digest a hundredth of that,
so each distinct text is scanned once (the most recent 4,096 are kept).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from sidecar.safety.scanner import Finding, scan

_KEEP = 4096
_lock = threading.Lock()
_seen: OrderedDict[bytes, Finding | None] = OrderedDict()


def scan_remembered(text: str) -> Finding | None:
    """``scan(text)``, from memory when this exact text was scanned before."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _lock:
        found = key in _seen
        if found:
            _seen.move_to_end(key)
            finding = _seen[key]
    if not found:
        finding = scan(text)  # outside the lock: scans on other threads go on meanwhile
        with _lock:
            _seen[key] = finding
            if len(_seen) > _KEEP:
                _seen.popitem(last=False)
    if finding is not None:  # every caller withholds what was flagged: that is a block
        # Imported on a block, not at import: the offline hook, a short process that
        # serves no metrics, would otherwise load the Prometheus client for nothing.
        from sidecar.metrics import INJECTION_BLOCKS

        INJECTION_BLOCKS.labels(category=finding.category).inc()
    return finding
