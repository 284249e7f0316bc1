"""Daemon settings, each declared once with its ``serve`` flag, variable and default.

A field's ``setting(...)`` says how ``sidecar serve`` sets it: ``--<option>``, else the
``SIDECAR_<ENV>`` variable, else the default. The ``serve`` parser and the ``Settings`` it
starts with are both derived from these declarations (``flags``, ``from_flags``), so a new
setting is one field.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any

from sidecar.daemon_client import DEFAULT_PORT
from sidecar.disk.tiers import Tier
from sidecar.index.chunking import DEFAULT_MAX_CHARS
from sidecar.stores import is_postgres, sqlite_file
from sidecar.stores import validate as validate_store

KIB = 1024
MIB = KIB * KIB
ROLES = ("agent", "lead")
# See retrieval/embedders/factory.py.
EMBEDDERS = ("auto", "minilm", "ollama", "openai", "lead", "none")
LLM_APIS = ("ollama", "openai")
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class Flag:
    """How ``sidecar serve`` sets one setting. ``help`` may say where ``{env}`` goes in it;
    otherwise the variable is named at its end."""

    help: str
    option: str  # the flag without "--"; "" for a setting only its variable sets (a secret)
    env: str  # the variable without "SIDECAR_"
    default: Any  # a value, or a function giving it when the parser is built
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    repeat: bool = False  # the flag may repeat; the variable is a comma list
    unit: int = 1  # the flag counts in these (MiB for --min-free-mb); the setting in ones

    @property
    def dest(self) -> str:
        return self.option.replace("-", "_")

    @property
    def help_text(self) -> str:
        where = f"env SIDECAR_{self.env}"
        if "{env}" in self.help:
            return self.help.replace("{env}", where)
        return f"{self.help} ({where})" if self.help else where

    def initial(self) -> Any:
        """The value before any flag: the variable (a string, which argparse converts with
        ``type`` and so refuses with the flag's name), else the default. An empty variable
        leaves a setting that is off by default (None) off."""
        raw = os.environ.get(f"SIDECAR_{self.env}")
        default = self.default() if callable(self.default) else self.default
        if raw is None or (raw == "" and default is None):
            if self.repeat:
                return list(default)
            return default // self.unit if self.unit != 1 else default
        return [part for part in raw.split(",") if part] if self.repeat else raw


def setting(
    default: Any = MISSING,
    help: str = "",
    *,
    option: str | None = None,
    env: str | None = None,
    serve_default: Any = MISSING,
    **how: Any,
) -> Any:
    """A ``Settings`` field with its flag: ``--<field-name>`` and ``SIDECAR_<FIELD_NAME>``
    unless ``option``/``env`` say otherwise; ``serve_default`` when ``serve`` starts from
    another value than the field's (the field may have none). An int or float default
    gives the flag its type."""
    start = default if serve_default is MISSING else serve_default
    if "type" not in how and type(start) in (int, float):
        how["type"] = type(start)
    meta = {"option": option, "env": env, "help": help, "default": start, "how": how}
    return field(default=default, metadata={"flag": meta})


def _flag(f: dataclasses.Field[Any]) -> Flag | None:
    meta = f.metadata.get("flag")
    if meta is None:
        return None
    option = f.name.replace("_", "-") if meta["option"] is None else meta["option"]
    env = meta["env"] or (option or f.name).upper().replace("-", "_")
    return Flag(meta["help"], option, env, meta["default"], **meta["how"])


def _nested(f: dataclasses.Field[Any]) -> type | None:
    """The class of a field that holds settings of its own (the caps), else None."""
    factory = f.default_factory
    return factory if isinstance(factory, type) and dataclasses.is_dataclass(factory) else None


def flags(cls: type | None = None) -> list[Flag]:
    """Every setting's flag, in field order (a nested class's in its place): the order
    ``serve --help`` lists them in."""
    found: list[Flag] = []
    for f in dataclasses.fields(cls or Settings):
        if inner := _nested(f):
            found += flags(inner)
        elif flag := _flag(f):
            found.append(flag)
    return found


def from_flags(values: Mapping[str, Any], cls: type | None = None) -> Any:
    """The ``Settings`` ``serve`` starts with, from its parsed flags (by ``Flag.dest``); a
    setting with no flag is read from its variable."""
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls or Settings):
        if inner := _nested(f):
            fields[f.name] = from_flags(values, inner)
        elif flag := _flag(f):
            value = values[flag.dest] if flag.option else flag.initial()
            if value == "" and flag.default is None:
                value = None  # "" turns off a setting that is off by default
            fields[f.name] = value * flag.unit if flag.unit != 1 else value
    return (cls or Settings)(**fields)


def serve_default(name: str) -> Any:
    """What ``sidecar serve`` would use for a setting given no flag (its variable, else its
    default): for commands that must agree with it, such as which folder is the crew's."""
    flag = {f.name: _flag(f) for f in dataclasses.fields(Settings)}[name]
    if flag is None:
        raise KeyError(f"{name} is not a serve setting")
    return flag.initial()


def host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def _cap(default: int, what: str, option: str) -> Any:
    return setting(default, f"largest size of {what} after a write", option=option)


@dataclass(frozen=True, slots=True)
class Caps:
    """Largest allowed size in UTF-8 bytes of a file after a write, by kind, and of a tier."""

    core: int = _cap(4000, "AGENT.md / CREW.md", "cap-core-bytes")
    daily: int = _cap(100 * KIB, "a daily log", "cap-daily-bytes")  # daily/YYYY-MM-DD.md
    topic: int = _cap(16 * KIB, "a topic or user file", "cap-topic-bytes")  # topics/, users/
    tier: int = _cap(10 * MIB, "a whole tier", "cap-tier-bytes")
    journal_day: int = _cap(64 * MIB, "a journal day file", "cap-journal-day-bytes")
    journal_tier: int = _cap(1024 * MIB, "a tier's whole journal", "cap-journal-tier-bytes")
    learnings: int = _cap(256 * KIB, "a learnings file", "cap-learnings-bytes")  # one <slug>.md
    facts_log: int = _cap(64 * MIB, "a tier's facts log", "cap-facts-log-bytes")  # log.jsonl
    # Below ``archive/``: history the lifecycle engine moved out of the active tier.
    archive: int = _cap(1024 * MIB, "a tier's archive", "cap-archive-bytes")
    # Day files retention archived (``archive/journal/``): apart from the active journal's.
    journal_archive: int = _cap(16 * 1024 * MIB, "a tier's journal archive",
                                "cap-journal-archive-bytes")  # fmt: skip

    def for_kind(self, kind: str) -> int:
        """The cap of a file kind (``sidecar.notes.files``: core, daily, topic, learning)."""
        kinds = {"core": self.core, "daily": self.daily, "topic": self.topic}
        return kinds.get(kind, self.learnings)  # "learning"


def folder(value: str) -> Path:
    """A tier folder; an empty one (an unset variable in a compose file) would be '.', the
    folder the daemon was started in, made a memory without a word."""
    if not value.strip():
        raise argparse.ArgumentTypeError(
            "is empty: give the folder that holds (or is to hold) this tier's memory "
            "(an empty SIDECAR_AGENT_DIR or SIDECAR_CREW_DIR counts as given)"
        )
    return Path(value)


@dataclass(frozen=True, slots=True)
class Settings:
    """What the daemon runs with; each field is a ``serve`` flag (see ``setting``)."""

    agent_dir: Path = setting(help="agent tier root", type=folder, serve_default=Path("~/.memory"))
    crew_dir: Path = setting(help="crew tier root", type=folder,
                             serve_default=Path("/crew/shared/.memory"))  # fmt: skip
    role: str = setting("agent", "lead indexes the crew tier", choices=ROLES)
    host: str = setting("127.0.0.1")
    port: int = setting(DEFAULT_PORT)
    chunk_chars: int = setting(DEFAULT_MAX_CHARS, "largest chunk in characters")
    reconcile_interval: float = setting(60.0, "seconds between full reconcile scans")
    allowed_hosts: tuple[str, ...] = setting(
        (), "extra Host header name to accept ({env}, comma list)", option="allowed-host",
        env="ALLOWED_HOSTS", repeat=True,
    )  # fmt: skip
    caps: Caps = field(default_factory=Caps)
    # The lifecycle engine: how often each tier is tended, and how long a daily log stays.
    maintain_interval: float = setting(
        6 * 3600.0, "seconds between maintenance passes of a tier (jittered by up to 10%)"
    )
    daily_retention_days: int = setting(
        30, "days a daily log stays in daily/ before it is archived (at least 2: today's "
        "and yesterday's are never archived)",
    )  # fmt: skip
    sessions_retention_days: int = setting(
        30, "days an ended session stays in sessions/log.jsonl (and its extraction in "
        "extraction/ledger.jsonl) before it moves below archive/ (at least 2)",
    )  # fmt: skip
    # Below this, writes are withdrawn from MCP.
    min_free_bytes: int = setting(64 * MIB, "free disk below which writes are withheld",
                                  option="min-free-mb", unit=MIB)  # fmt: skip
    lead_url: str | None = setting(  # a member asks the lead's sidecar for the crew tier
        None, "a member's route to the lead's crew address ({env}); the crew token comes "
        "from SIDECAR_CREW_TOKEN",
    )  # fmt: skip
    crew_listen: tuple[str, int] | None = setting(  # the lead's crew-only address
        None, "on the lead, also serve crew-only reads here ({env}); requests need the "
        "SIDECAR_CREW_TOKEN bearer token", type=host_port, metavar="HOST:PORT",
    )  # fmt: skip
    # The shared secret between the lead and its members: only ever from its variable.
    crew_token: str | None = setting(None, option="")
    embedder: str = setting("auto", "dense retrieval: auto = in-process MiniLM if installed, "
                            "else sparse-only; lead = a member borrows its lead's model",
                            choices=EMBEDDERS)  # fmt: skip
    embed_threads: int = setting(  # the rest of the machine stays responsive
        1, "inference threads for the in-process model"
    )
    ollama_url: str = setting("", "with --embedder ollama; default http://127.0.0.1:11434")
    ollama_model: str = setting("", "with --embedder ollama; default nomic-embed-text")
    # One wire protocol (OpenAI's /v1/embeddings) for an external server and the lead.
    embed_url: str = setting("", "with --embedder openai: the server (http://host:port/v1)")
    embed_model: str = setting("", "with --embedder openai: the model the server embeds with")
    embed_api_key_env: str = setting(  # the variable holding the key: never the key itself
        "", "with --embedder openai: the name of the environment variable holding its API key"
    )
    embed_retry: float = setting(30.0, "seconds between attempts to reach an embedder that "
                                 "failed (a server or lead away)")  # fmt: skip
    agent_id: str = setting(
        "", "recorded on journal events that do not name one ({env}; default the host name, "
        "which is the container's)", serve_default=socket.gethostname,
    )  # fmt: skip
    journal_retention_days: int = setting(
        90, "days after which an ordinary journal event keeps only its summary and a "
        "payload excerpt (the whole day file is archived, compressed)",
    )  # fmt: skip
    # Consolidation of episodes into facts: off unless an LLM server is named.
    llm_url: str = setting(
        "", "an LLM server for consolidating episodes into facts: Ollama "
        "(http://127.0.0.1:11434) or OpenAI-compatible (.../v1); none: off",
    )  # fmt: skip
    llm_model: str = setting("")
    llm_api: str = setting("", "the server's wire format; default openai when the URL ends in "
                           "/v1, else ollama", choices=LLM_APIS)  # fmt: skip
    llm_api_key_env: str = setting(  # the variable holding the key: never the key itself
        "", "the name of the environment variable holding the API key, if one is needed"
    )
    llm_timeout: float = setting(60.0, "seconds an LLM request may take")
    # Where each tier's index lives (``sidecar.stores``): empty means the SQLite file in
    # the tier's folder; a postgresql:// URL a shared database, under a namespace.
    store: str = setting("", "where both tiers' indexes live: a postgresql:// URL, or empty "
                         "for the SQLite file in each tier's folder")  # fmt: skip
    agent_store: str = setting(
        "", "the agent tier's index, overriding --store (sqlite: the local file)"
    )
    crew_store: str = setting(
        "", "the crew tier's index, overriding --store (sqlite: the local file)"
    )
    namespace: str = setting(
        "", "this crew's key in a shared PostgreSQL store; the crew tier is NAMESPACE/crew, "
        "the agent tier NAMESPACE/agent/AGENT_ID; no '/' in either (default: default)",
    )  # fmt: skip

    def __post_init__(self) -> None:
        # Watcher events carry absolute, resolved paths; compare like with like.
        object.__setattr__(self, "agent_dir", self.agent_dir.expanduser().resolve())
        object.__setattr__(self, "crew_dir", self.crew_dir.expanduser().resolve())
        object.__setattr__(self, "allowed_hosts", tuple(h.lower() for h in self.allowed_hosts))
        if not self.llm_api:
            api = "openai" if self.llm_url.rstrip("/").endswith("/v1") else "ollama"
            object.__setattr__(self, "llm_api", api)
        for f in dataclasses.fields(self):
            flag, value = _flag(f), getattr(self, f.name)
            if flag and flag.choices and value not in flag.choices:
                one_of = ", ".join(flag.choices)
                raise ValueError(f"{f.name.replace('_', ' ')} must be one of {one_of}, "
                                 f"not {value!r}")  # fmt: skip
        if self.embed_threads < 1:
            raise ValueError(f"embed threads must be at least 1, not {self.embed_threads}")
        if self.embed_retry <= 0:
            raise ValueError("embed retry must be positive")
        if self.embedder == "openai" and not (self.embed_url and self.embed_model):
            raise ValueError("--embedder openai needs --embed-url and --embed-model")
        if self.embedder == "lead" and not self.lead_url:
            raise ValueError("--embedder lead is for a crew member: it needs --lead-url")
        if self.journal_retention_days < 1:
            raise ValueError("journal retention must be at least 1 day")
        if self.reconcile_interval <= 0:
            raise ValueError("reconcile interval must be positive")
        if self.maintain_interval <= 0:
            raise ValueError("maintain interval must be positive")
        if self.daily_retention_days < 2:
            raise ValueError("daily retention must be at least 2 days: today's and "
                             f"yesterday's logs stay, not {self.daily_retention_days}")  # fmt: skip
        if self.sessions_retention_days < 2:
            raise ValueError("session retention must be at least 2 days: sessions ended "
                             "within a day are told to extraction again at start")  # fmt: skip
        if self.crew_listen and self.role != "lead":
            raise ValueError("only the lead (--role lead) serves a crew address")
        if self.lead_url and self.role == "lead":
            raise ValueError("the lead owns the crew tier; --lead-url is for members")
        if self.llm_url and not self.llm_model:
            raise ValueError("an LLM server (--llm-url) needs a model (--llm-model)")
        if (self.crew_listen or self.lead_url) and not self.crew_token:
            raise ValueError("a crew address or lead URL needs SIDECAR_CREW_TOKEN")
        for location in (self.store, self.agent_store, self.crew_store):
            validate_store(location)
        if self.store not in ("", "sqlite") and not is_postgres(self.store):
            raise ValueError("--store is for a postgresql:// URL both tiers share (by "
                             "namespace); a SQLite file holds one tier: use --agent-store "
                             "or --crew-store for a path")  # fmt: skip
        agent_at, crew_at = self.agent_store or self.store, self.crew_store or self.store
        # A tier's key in a shared store is namespace/crew or namespace/agent/agent-id: a
        # "/" in either part could make one tier's key another's ("x" with agent "y/crew"
        # is the crew of namespace "x/agent/y"), and that tier would read the other's rows.
        if "/" in self.namespace:
            raise ValueError(f"the namespace may not contain '/': {self.namespace!r}")
        if "/" in self.agent_id and is_postgres(agent_at):
            raise ValueError(f"with the agent tier in PostgreSQL, the agent id may not "
                             f"contain '/': {self.agent_id!r}")  # fmt: skip
        if agent_at == crew_at and agent_at not in ("", "sqlite") and not is_postgres(agent_at):
            raise ValueError("the agent and crew tiers cannot share one SQLite file")

    def tiers(self) -> list[Tier]:
        """The tiers this sidecar indexes: its own, plus the crew tier on the lead."""
        tiers = [Tier("agent", self.agent_dir)]
        if self.role == "lead":
            tiers.append(Tier("crew", self.crew_dir))
        return tiers

    def prepare_folders(self) -> list[Tier]:
        """Give each tier this sidecar indexes its folder, and return the tiers whose folder
        had to be created (a misspelt path makes an empty memory: the caller says so). A path
        that is there but not a folder is refused with a sentence, before anything is made."""
        for tier in self.tiers():
            if tier.root.exists() and not tier.root.is_dir():
                raise ValueError(f"--{tier.name}-dir {tier.root} is not a folder: give the "
                                 f"folder that holds (or is to hold) the {tier.name} tier's "
                                 "memory")  # fmt: skip
        created = []
        for tier in self.tiers():
            if tier.root.is_dir():
                continue
            try:
                tier.root.mkdir(parents=True)
            except OSError as exc:
                why = f"cannot create the folder ({exc.strerror})"
                raise ValueError(f"--{tier.name}-dir {tier.root}: {why}; give a folder this "
                                 "user can write") from None  # fmt: skip
            created.append(tier)
        return created

    def store_for(self, tier: Tier) -> tuple[str, str]:
        """Where ``tier``'s index lives ("" for its SQLite file) and its namespace there."""
        own = self.crew_store if tier.name == "crew" else self.agent_store
        space = self.namespace or DEFAULT_NAMESPACE
        if tier.name == "crew":
            return own or self.store, f"{space}/crew"
        return own or self.store, f"{space}/agent/{self.agent_id or 'agent'}"

    def sqlite_indexes(self) -> list[tuple[Path, Path]]:
        """(folder, index file) of each tier this sidecar indexes in a SQLite file."""
        files = [(t.root, sqlite_file(self.store_for(t)[0], t.index_path)) for t in self.tiers()]
        return [(root, file) for root, file in files if file is not None]

    def crew_reader(self) -> tuple[str, str] | None:
        """Where a member reads the crew tier's index itself, read-only: the crew store
        when it is PostgreSQL (the lead's namespace there), so crew searches need no hop
        through the lead. None on the lead, or when the member asks the lead."""
        if self.role == "lead":
            return None
        location, namespace = self.store_for(Tier("crew", self.crew_dir))
        return (location, namespace) if is_postgres(location) else None
