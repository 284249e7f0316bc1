"""Parser worker processes for large index builds.

Parsing markdown into chunks is pure Python and holds the GIL, so on a cold build
of thousands of files it, not SQLite, sets the pace. A few worker processes read
and parse files ahead of the index writer, which only inserts what they return.

Workers are plain ``python -m sidecar.index.parse_pool`` children speaking pickle
over their stdin/stdout (not ``multiprocessing``, whose spawned children import the
parent's ``__main__``: the whole daemon). Any failure of a worker falls back to
parsing in the calling thread, so a build never depends on them.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import itertools
import logging
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from sidecar.index.indexer import Parsed, read_parsed
from sidecar.index.store import ChunkRow, FileState, PreparedFile, chunk_rows, metadata_json

log = logging.getLogger(__name__)

BATCH_FILES = 64  # files per request: small enough to keep every worker busy
# How far parsing runs ahead of the writer, in files parsed and not yet taken: more than
# a build commits at once (build.COMMIT_FILES), so workers keep parsing while it inserts.
AHEAD_FILES = 6144
MAX_FD = 65536  # a forked worker closes every descriptor from 3 up to this
# Workers run this much nicer than the daemon. Its writer thread inserting what they parse
# sets a build's pace: at equal priority two workers leave it two thirds of a core, and it
# ends the build inserting a backlog alone (10k notes: faster in 6 of 7 paired builds).
# The agent beside the sidecar keeps its priority over a background build too.
WORKER_NICE = 10
# The pipes' size (Linux's default is 64 KB; 1 MB is the most an unprivileged process may
# ask for). Requests sent ahead (``ParsePool.ahead``, 96 of about 3 KB) fill a 64 KB pipe,
# and the daemon's start then waits for the workers to read them: 0.83 s at 10k notes,
# against 0.08 s. An answer (about 350 KB) fits whole, so a worker goes on parsing while
# the daemon's reader thread waits for the GIL, as it does while the daemon loads.
PIPE_BYTES = 1 << 20
# An answer's frame: its ticket and the length of the pickled rows that follow.
_FRAME = struct.Struct("<QQ")


def default_workers() -> int:
    """One per core, at most four: the writer and the event loop need a core too."""
    return max(1, min(4, os.cpu_count() or 1))


class _Worker:
    """One child process and the thread that reads its answers.

    Forked where the OS can (milliseconds, with every module already imported: a
    fresh interpreter costs a tenth of a second of CPU before it parses anything),
    else a fresh ``python -m sidecar.index.parse_pool``. A forked child closes every
    descriptor it inherited but its two pipes, so it holds no socket or database of
    the daemon's, and never touches the state it inherited beyond the parser.
    """

    def __init__(self, pool: ParsePool) -> None:
        self._pool = pool
        self.pid = 0
        self.proc: subprocess.Popen[bytes] | None = None
        if hasattr(os, "fork"):
            to_child, from_child = self._fork()
            self.stdin: IO[bytes] = os.fdopen(to_child, "wb")
            out: IO[bytes] = os.fdopen(from_child, "rb")
        else:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "sidecar.index.parse_pool"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True,
            )  # fmt: skip
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.stdin, out = self.proc.stdin, self.proc.stdout
        self._reader = threading.Thread(
            target=self._read, args=(out,), name="sidecar-parse-reader", daemon=True
        )
        self._reader.start()

    def _fork(self) -> tuple[int, int]:
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        for end in (req_w, res_w):
            with contextlib.suppress(OSError, AttributeError):  # Linux only; a cap may refuse
                fcntl.fcntl(end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon decides when to stop
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.dup2(req_r, 0)
                os.dup2(res_w, 1)
                os.closerange(3, MAX_FD)
                _settle_forked()
                serve(os.fdopen(0, "rb"), os.fdopen(1, "wb"))
                code = 0
            finally:
                os._exit(code)
        self.pid = pid
        os.close(req_r)
        os.close(res_w)
        return req_w, res_r

    def send(self, ticket: int, root: Path, rels: list[str], max_chars: int) -> None:
        pickle.dump((ticket, str(root), rels, max_chars), self.stdin, pickle.HIGHEST_PROTOCOL)
        self.stdin.flush()

    def _read(self, out: IO[bytes]) -> None:
        """Answers are read as bytes, unpickled by whoever takes them: this thread holding
        the GIL to unpickle would make the writer wait for it after every SQLite call."""
        try:
            with out:
                while True:
                    head = out.read(_FRAME.size)
                    if len(head) < _FRAME.size:
                        break
                    ticket, size = _FRAME.unpack(head)
                    data = out.read(size)
                    if len(data) < size:
                        break
                    self._pool._answer(ticket, data)
        except Exception:  # a broken pipe: nothing more from it
            pass
        self._pool._lost(self)

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stdin.close()  # EOF: the worker exits when its current request is done
        if self.proc is not None:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
            return
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(self.pid, os.WNOHANG)[0] != 0:
                    return
            time.sleep(0.005)
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)


class ParsePool:
    """Worker processes parsing notes for builds; ``parse`` yields results in order.

    Thread-safe: builds of two tiers may interleave their requests on the same workers.
    """

    def __init__(self, workers: int | None = None) -> None:
        self._lock = threading.Condition()
        self._answers: dict[int, bytes | None] = {}  # pickled rows, once answered
        self._tickets = itertools.count(1)
        self._workers: list[_Worker] = []
        self._broken = False
        self._next = 0
        # Requests sent before anyone asked, by root: (files, max_chars, their tickets).
        self._ahead: dict[Path, tuple[list[str], int, list[int | None]]] = {}
        self._parsings: set[Parsing] = set()  # under way, for ``close`` to stop
        try:
            for _ in range(workers or default_workers()):
                self._workers.append(_Worker(self))
        except OSError as exc:
            log.warning("parser workers unavailable; parsing in process",
                        extra={"error": str(exc)})  # fmt: skip
            self._broken = True

    @property
    def workers(self) -> int:
        return len(self._workers)

    @property
    def usable(self) -> bool:
        return not self._broken and bool(self._workers)

    def _answer(self, ticket: int, data: bytes) -> None:
        with self._lock:
            if ticket in self._answers:
                self._answers[ticket] = data
                self._lock.notify_all()

    def _lost(self, worker: _Worker) -> None:
        with self._lock:
            if not self._broken and worker in self._workers:
                log.warning("a parser worker exited; parsing in process")
            self._broken = True
            self._lock.notify_all()

    def _submit(self, root: Path, rels: list[str], max_chars: int) -> int | None:
        """Send one request; its ticket, or None if no worker can take it."""
        with self._lock:
            if self._broken or not self._workers:
                return None
            ticket = next(self._tickets)
            self._answers[ticket] = None
            worker = self._workers[self._next % len(self._workers)]
            self._next += 1
        try:
            worker.send(ticket, root, rels, max_chars)
        except (OSError, ValueError, pickle.PicklingError):
            self._lost(worker)
            return None
        return ticket

    def _drop(self, tickets: list[int | None]) -> None:
        """Forget answers a parsing stopped before taking (still to come, or come)."""
        with self._lock:
            for ticket in tickets:
                if ticket is not None:
                    self._answers.pop(ticket, None)

    def _take(self, ticket: int | None) -> list[Parsed] | None:
        """The answer to ``ticket``; None if the workers failed before giving it."""
        if ticket is None:
            return None
        with self._lock:
            while self._answers.get(ticket) is None and not self._broken:
                self._lock.wait()
            data = self._answers.pop(ticket, None)
        if data is None:
            return None
        try:
            return [_restore(row) for row in pickle.loads(data)]
        except Exception:  # a garbled answer: the caller parses the batch itself
            log.warning("a parser worker's answer was unreadable; parsing in process")
            return None

    def parse(self, root: Path, rels: list[str], max_chars: int) -> Parsing:
        """Every file of ``rels``, read and parsed, in order. Of the requests sent ``ahead``
        for this root, those asking for the same files as ``rels``'s batches, from the
        first one on, are taken over; the rest are dropped."""
        with self._lock:
            early = self._ahead.pop(root, None)
        taken_over: list[int | None] = []
        if early is not None:
            sent, chars, tickets = early
            pairs = zip(tickets, _batches(rels), _batches(sent), strict=False)
            for ticket, mine, theirs in pairs:
                if chars != max_chars or mine != theirs:
                    break
                taken_over.append(ticket)
            self._drop(tickets[len(taken_over) :])
        return Parsing(self, root, rels, max_chars, taken_over)

    def drop_ahead(self, root: Path) -> None:
        """Drop the requests sent ahead for ``root``: no build of it will take them over."""
        with self._lock:
            early = self._ahead.pop(root, None)
        if early is not None:
            self._drop(early[2])

    def ahead(self, root: Path, rels: list[str], max_chars: int) -> None:
        """Request the parsing of ``rels`` (at most ``AHEAD_FILES``) before anyone asks: a
        daemon facing a cold build does this before it has loaded, and its build takes
        the answers over (``parse``). Sent from the caller's thread: the requests fit in
        the pipes' buffers, and a thread of its own would compete with the loading for
        the GIL."""
        rels = rels[:AHEAD_FILES]
        with self._lock:
            if self._broken or root in self._ahead:
                return
        tickets = [self._submit(root, batch, max_chars) for batch in _batches(rels)]
        with self._lock:
            self._ahead[root] = (rels, max_chars, tickets)

    def parsing_ahead(self, root: Path) -> bool:
        """Whether ``ahead`` parses ``root`` and no ``parse`` has taken it over yet."""
        with self._lock:
            return root in self._ahead

    def close(self) -> None:
        """Stop the workers, and every parsing still under way (its takers parse what is
        left in process)."""
        with self._lock:
            workers, self._workers = self._workers, []
            parsings, self._parsings = list(self._parsings), set()
            self._ahead = {}
            self._broken = True
            self._lock.notify_all()
        for parsing in parsings:
            parsing._stop()
        for worker in workers:
            worker.close()
        with self._lock:
            self._answers.clear()


class Parsing:
    """One list of files being parsed by the pool; iterate to take them in order.

    A feeder thread keeps up to ``AHEAD_FILES`` of them requested and not yet taken,
    whatever the taker is doing: were requests sent only as answers are taken, the
    workers would sit idle while the writer inserts a batch.
    """

    def __init__(
        self,
        pool: ParsePool,
        root: Path,
        rels: list[str],
        max_chars: int,
        sent: list[int | None] | None = None,
    ) -> None:
        """``sent``: tickets of the first batches of ``rels``, requested already."""
        self._pool, self._root, self._max_chars = pool, root, max_chars
        self._batches = _batches(rels)
        self._cond = threading.Condition()
        self._tickets: list[int | None] = list(sent or [])
        self.taken_over = sum(map(len, self._batches[: len(self._tickets)]))  # files in ``sent``
        self._taken = 0
        self._stopped = False
        self._gen = self._take_all()
        self._feeder = threading.Thread(target=self._feed, name="sidecar-parse-feeder", daemon=True)
        with pool._lock:
            pool._parsings.add(self)
        self._feeder.start()

    def _feed(self) -> None:
        window = max(2 * self._pool.workers, AHEAD_FILES // BATCH_FILES)
        for batch in self._batches[len(self._tickets) :]:
            with self._cond:
                while not self._stopped and len(self._tickets) - self._taken >= window:
                    self._cond.wait()
                if self._stopped:
                    return
            ticket = self._pool._submit(self._root, batch, self._max_chars)
            with self._cond:
                self._tickets.append(ticket)
                self._cond.notify_all()

    def __iter__(self) -> Parsing:
        return self

    def __next__(self) -> Parsed:
        return next(self._gen)

    def _take_all(self) -> Iterator[Parsed]:
        try:
            for k, batch in enumerate(self._batches):
                with self._cond:
                    while len(self._tickets) <= k and not self._stopped:
                        self._cond.wait()
                    ticket = self._tickets[k] if k < len(self._tickets) else None  # never sent
                answer = self._pool._take(ticket)
                with self._cond:
                    self._taken = k + 1
                    self._cond.notify_all()
                if answer is None:
                    answer = read_parsed(self._root, batch, self._max_chars)
                yield from answer
        finally:
            self._stop()

    def close(self) -> None:
        """Stop early: answers still to come are dropped. The feeder thread holds this
        object, so one that is only let go of never stops: whoever drops it closes it."""
        self._gen.close()
        self._stop()

    def _stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._feeder.join()
        self._pool._drop(self._tickets[self._taken :])
        with self._pool._lock:
            self._pool._parsings.discard(self)


def _batches(rels: list[str]) -> list[list[str]]:
    """``rels`` as the requests the workers get: ``BATCH_FILES`` files each."""
    return [rels[i : i + BATCH_FILES] for i in range(0, len(rels), BATCH_FILES)]


# Parsed files cross the pipe as plain tuples, their chunks as the rows a store inserts:
# rebuilding one object per chunk on the writer's side cost more than the parse it saved.
_Row = tuple[str, str | None, tuple[Any, ...] | None]
_ROW_FIELDS = len(ChunkRow.__args__)


def _flatten(parsed: Parsed) -> _Row:
    rel, item, why = parsed
    if item is None:
        return rel, why, None
    st = item.state
    meta = (item.metadata, metadata_json(item.metadata))
    return rel, why, (st.size, st.mtime_ns, st.sha256, meta, chunk_rows(rel, item.chunks))


def _restore(row: _Row) -> Parsed:
    rel, why, body = row
    if body is None:
        return rel, None, why
    size, mtime_ns, sha, (metadata, meta_text), rows = body
    if set(map(len, rows)) - {_ROW_FIELDS}:  # found here, the batch is parsed again
        raise ValueError("a chunk row of another shape")
    return rel, PreparedFile(rel, FileState(size, mtime_ns, sha), metadata, meta_text, rows), why


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """The worker's loop: parse each request, answer it, exit at EOF."""
    while True:
        try:
            ticket, root, rels, max_chars = pickle.load(stdin)
        except EOFError:
            return
        rows = [_flatten(p) for p in read_parsed(Path(root), rels, max_chars)]
        data = pickle.dumps(rows, pickle.HIGHEST_PROTOCOL)
        stdout.write(_FRAME.pack(ticket, len(data)))
        stdout.write(data)
        stdout.flush()


def _settle_forked() -> None:
    """A forked worker's first step. The daemon's objects it inherited go to the collector's
    permanent generation: a collection of the oldest generation in the worker would go
    through every one of them, writing to each one's header and so copying the daemon's
    memory page by page (the workers' CPU on 1,000 notes: 0.37 s without, 0.29 s with)."""
    gc.freeze()
    _lower_priority()


def _lower_priority() -> None:
    with contextlib.suppress(OSError):  # raising niceness is always allowed; be safe anyway
        os.nice(WORKER_NICE)


def _main() -> None:
    _lower_priority()
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    _main()
