"""Load the system's CA certificates for aiohttp's TLS client contexts when one is first
used, not when aiohttp is imported.

``aiohttp.connector`` builds two client contexts as it is imported, and each reads the
system CA bundle: about 3 MB resident in every daemon, though most never open a TLS
connection (a member talks plain HTTP to its lead; an embedding or LLM server may be
https). While that module runs, contexts are made of a subclass that records its calls
to ``load_default_certs`` and ``set_default_verify_paths`` and makes them, unchanged,
just before the context first wraps a connection: where TLS finds certificates does not
change, only when they are read (once, on the first handshake, which does the same kind
of work). Nothing else in the process is touched.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import ssl
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import Any

MODULE = "aiohttp.connector"  # the module that builds its contexts as it is imported
_CA_CALLS = ("load_default_certs", "set_default_verify_paths")


class _DeferredCAs(ssl.SSLContext):
    """A context made while ``MODULE`` ran: makes the CA loading calls it recorded then
    before it first wraps a connection."""

    _pending: list[Callable[[], None]]
    _lock: threading.Lock

    def load_deferred(self) -> None:
        """Make the recorded calls, once, in order."""
        with self._lock:
            while self._pending:
                self._pending.pop(0)()

    def wrap_socket(self, *args: Any, **kwargs: Any) -> Any:
        self.load_deferred()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> Any:
        self.load_deferred()
        return super().wrap_bio(*args, **kwargs)


@contextlib.contextmanager
def _contexts_defer_cas() -> Iterator[None]:
    """While the block runs, a context's CA loading calls are recorded, not made; after
    it, each context that recorded some becomes a ``_DeferredCAs`` (same layout: only
    its methods change), which makes them when first used. ``ssl.SSLContext`` itself is
    patched only meanwhile: its own methods name it, so a subclass cannot stand in."""
    made: list[ssl.SSLContext] = []
    plain = {name: getattr(ssl.SSLContext, name) for name in _CA_CALLS}

    def recorder(name: str) -> Callable[..., None]:
        def record(ctx: ssl.SSLContext, *args: Any) -> None:
            if "_pending" not in ctx.__dict__:
                ctx._pending, ctx._lock = [], threading.Lock()  # type: ignore[attr-defined]
                made.append(ctx)
            ctx._pending.append(lambda: plain[name](ctx, *args))  # type: ignore[attr-defined]

        return record

    for name in _CA_CALLS:
        setattr(ssl.SSLContext, name, recorder(name))
    try:
        yield
    finally:
        for name, method in plain.items():
            setattr(ssl.SSLContext, name, method)
        for ctx in made:
            ctx.__class__ = _DeferredCAs


class _Loader(importlib.abc.Loader):
    """``MODULE``'s own loader, its module run with CA loading deferred."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> Any:  # get_source and the like, for tracebacks
        return getattr(self.loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        with _contexts_defer_cas():
            self.loader.exec_module(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != MODULE:
            return None
        sys.meta_path.remove(self)  # once is all it takes
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def defer_ca_loading() -> None:
    """Have aiohttp's import-time TLS contexts read the CA certificates when first used.
    Call before aiohttp is imported (if it already is, this does nothing)."""
    if MODULE not in sys.modules and not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
