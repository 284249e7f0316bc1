"""A member's view of the crew tier: every crew query goes to the lead's sidecar.

The lead owns the crew index (one writer, one watcher); members keep no copy.
Connections are pooled and timeouts short, because a member answering its own
agent must not hang on a lead that went away. Reachability is tracked from
every request and from a slow background probe, so ``/healthz`` tells the
truth and recovery needs no restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import aiohttp

from sidecar.errors import ApiError

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 1.0
TOTAL_TIMEOUT = 5.0
PROBE_INTERVAL = 5.0


class LeadUnavailable(Exception):
    """The lead could not be reached or did not answer as a lead should."""


class LeadError(Exception):
    """The lead answered with an error the caller should see as is."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("detail", ""))
        self.status = status
        self.body = body

    def to_api_error(self) -> ApiError:
        """The lead's own error answer, passed on with where it came from."""
        return ApiError.from_json(self.status, self.body, "lead_error", "crew lead: ")


def unreachable(url: str | None, exc: Exception) -> ApiError:
    """A crew-only request whose lead could not be reached: nothing local can answer it."""
    return ApiError(503, "crew_unavailable", f"lead sidecar at {url} unreachable: {exc}")


class LeadClient:
    def __init__(self, url: str, token: str, probe_interval: float = PROBE_INTERVAL) -> None:
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._probe_interval = probe_interval
        self._session: aiohttp.ClientSession | None = None
        self._probe: asyncio.Task[None] | None = None
        self.reachable: bool | None = None  # None: not asked yet
        self.last_error: str | None = None
        self.last_ok: float | None = None

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=TOTAL_TIMEOUT, sock_connect=CONNECT_TIMEOUT),
            connector=aiohttp.TCPConnector(limit=32, keepalive_timeout=30),
            headers=self._headers,
        )
        self._probe = asyncio.create_task(self._probe_loop(), name="lead-probe")

    async def close(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probe
        if self._session is not None:
            await self._session.close()

    async def _probe_loop(self) -> None:
        while True:
            try:
                await self.request("GET", "/healthz")
            except LeadUnavailable:
                pass  # already marked
            except LeadError as exc:  # a lead's health always answers 200 when it works
                self._mark(f"lead /healthz answered {exc.status}: {exc}")
            await asyncio.sleep(self._probe_interval)

    def _mark(self, error: str | None) -> None:
        was = self.reachable
        self.reachable = error is None
        if error is None:
            self.last_ok = time.time()
        else:
            self.last_error = error
        if was is not self.reachable:
            if error is None:
                log.info("crew lead reachable", extra={"lead": self.url})
            else:
                log.warning("crew lead unreachable", extra={"lead": self.url, "error": error})

    async def request(
        self, method: str, path: str, json: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """One call to the lead, retried once if the connection was refused."""
        assert self._session is not None, "start() first"
        for attempt in (1, 2):
            try:
                async with self._session.request(method, self.url + path, json=json) as resp:
                    body = await resp.json(content_type=None)
                    if not isinstance(body, dict):
                        raise LeadUnavailable(f"lead answered {resp.status} without a JSON object")
                    if resp.status in (401, 403) or (resp.status >= 500 and "error" not in body):
                        # Our credentials, or something in front of the lead, not the query.
                        raise LeadUnavailable(
                            f"lead answered {resp.status}: {body.get('detail', body)}"
                        )
                    if resp.status < 500:
                        self._mark(None)  # it answered this request as a lead does
                    if resp.status >= 400:  # the lead's own error answer: pass it on
                        raise LeadError(resp.status, body)
                    return body
            except aiohttp.ClientConnectorError as exc:
                if attempt == 1 and isinstance(exc.os_error, ConnectionRefusedError):
                    continue  # the lead may be restarting: one quick retry
                self._mark(f"{type(exc).__name__}: {exc}")
                raise LeadUnavailable(self.last_error) from exc
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                self._mark(f"{type(exc).__name__}: {exc}".rstrip(": "))
                raise LeadUnavailable(self.last_error) from exc
            except LeadUnavailable as exc:
                self._mark(str(exc))
                raise
        raise AssertionError("unreachable")

    async def answer(
        self, method: str, path: str, json: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A request whose answer the caller passes on: the lead's own error answer raised
        as the ``ApiError`` it describes; ``LeadUnavailable`` if it could not be asked."""
        try:
            return await self.request(method, path, json)
        except LeadError as exc:
            raise exc.to_api_error() from None

    async def answer_or_note(
        self, path: str, json: dict[str, Any], notes: list[str], instead: str
    ) -> dict[str, Any] | None:
        """``answer`` for a query the caller can half-answer alone: with the lead out of
        reach, None and a note saying so (``instead``: what the answer holds then)."""
        try:
            return await self.answer("POST", path, json)
        except LeadUnavailable as exc:
            notes.append(f"{unreachable(self.url, exc).detail}; {instead}")
            return None

    def health(self) -> dict[str, Any]:
        return {
            "state": "proxied",
            "lead_url": self.url,
            "reachable": bool(self.reachable),
            "last_error": self.last_error,
        }
