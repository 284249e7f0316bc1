"""Regexes compiled the first time they are used rather than at import.

The rule tables hold a few hundred large patterns; compiling them all at import
took 0.3 s on an idle core (over a second on a loaded one), paid by every
process that imports the scanner, the offline session-start hook included.
Most scans need few of them: rules try their regexes only where a literal
anchor occurs in the text (see :mod:`sidecar.safety.rules`). So each pattern
is compiled by ``re`` on its first use, with the same pattern and flags, and
matches exactly as it would have compiled eagerly.
"""

from __future__ import annotations

import re
from typing import Any, AnyStr

_METHODS = ("match", "search", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class LazyPattern:
    """Stands in for ``re.compile(pattern, flags)`` and compiles it on first use.

    The methods the scanner calls are slots, unset until the first access
    misses and lands in ``__getattr__``, which compiles the pattern and fills
    them with the compiled pattern's bound methods. From then on a call such
    as ``p.search(text)`` reads a slot and goes straight to ``re``: no wrapper
    runs per match. ``pattern`` is kept as given, so tables can still build
    larger patterns from smaller ones (``NET.pattern + ...``) without compiling.
    """

    __slots__ = ("_flags", "_compiled", "pattern", *_METHODS)

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[Any] | None = None

    def compiled(self) -> re.Pattern[Any]:
        """The compiled pattern, compiling it now if this is its first use."""
        if self._compiled is None:
            compiled = re.compile(self.pattern, self._flags)
            for name in _METHODS:
                setattr(self, name, getattr(compiled, name))
            self._compiled = compiled  # last: a thread seeing it set sees the methods set
        return self._compiled

    def __getattr__(self, name: str) -> Any:
        # Reached only for an unset method slot (before the first use) or an
        # attribute that only the compiled pattern has (``flags``, ``groups``).
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        state = "compiled" if self._compiled is not None else "not compiled yet"
        return f"LazyPattern({self.pattern!r}, {self._flags!r}; {state})"


def compile(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """A pattern that ``re`` compiles on first use; a drop-in for ``re.compile`` in rule tables."""
    lazy: Any = LazyPattern(pattern, flags)
    return lazy  # typed as the pattern it behaves as
