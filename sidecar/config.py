"""Daemon settings: command-line flags, each with an environment variable fallback."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sidecar.disk.tiers import Tier
from sidecar.index.chunking import DEFAULT_MAX_CHARS
from sidecar.stores import is_postgres, sqlite_file
from sidecar.stores import validate as validate_store

KIB = 1024
ROLES = ("agent", "lead")
EMBEDDERS = ("auto", "minilm", "ollama", "none")  # see retrieval/embedders/factory.py
DEFAULT_PORT = 9119
DEFAULT_NAMESPACE = "default"
# ``serve`` flags (each with a SIDECAR_* variable) that say where tier indexes live.
STORE_FLAGS = (
    ("store", "where both tiers' indexes live: a postgresql:// URL, or empty for the "
              "SQLite file in each tier's folder"),
    ("agent-store", "the agent tier's index, overriding --store (sqlite: the local file)"),
    ("crew-store", "the crew tier's index, overriding --store (sqlite: the local file)"),
    ("namespace", "this crew's key in a shared PostgreSQL store; the crew tier is "
                  "NAMESPACE/crew, the agent tier NAMESPACE/agent/AGENT_ID; no '/' in either "
                  "(default: default)"),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Caps:
    """Largest allowed size in UTF-8 bytes of a file after a write, by kind, and of a tier."""

    core: int = 4000  # AGENT.md or CREW.md
    daily: int = 100 * KIB  # daily/YYYY-MM-DD.md
    topic: int = 16 * KIB  # topics/ and users/
    tier: int = 10 * KIB * KIB
    journal_day: int = 64 * KIB * KIB  # one journal/YYYY-MM-DD.jsonl
    journal_tier: int = 1024 * KIB * KIB  # every day file of a tier together
    learnings: int = 256 * KIB  # one learnings/<slug>.md
    facts_log: int = 64 * KIB * KIB  # a tier's facts/log.jsonl

    def for_kind(self, kind: str) -> int:
        """The cap of a file kind (``sidecar.notes.files``: core, daily, topic, learning)."""
        kinds = {"core": self.core, "daily": self.daily, "topic": self.topic}
        return kinds.get(kind, self.learnings)  # "learning"


@dataclass(frozen=True, slots=True)
class Settings:
    agent_dir: Path
    crew_dir: Path
    role: str = "agent"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    chunk_chars: int = DEFAULT_MAX_CHARS
    reconcile_interval: float = 60.0
    allowed_hosts: tuple[str, ...] = ()
    caps: Caps = field(default_factory=Caps)
    min_free_bytes: int = 64 * 1024 * 1024  # below this, writes are withdrawn from MCP
    lead_url: str | None = None  # a member asks the lead's sidecar for the crew tier
    crew_listen: tuple[str, int] | None = None  # the lead's crew-only address
    crew_token: str | None = None  # shared secret between the lead and its members
    # Dense retrieval: "auto" (in-process MiniLM when installed), "minilm", "ollama", "none".
    embedder: str = "auto"
    embed_threads: int = 1  # inference threads: the rest of the machine stays responsive
    ollama_url: str = ""
    ollama_model: str = ""
    agent_id: str = ""  # who recorded a journal event, unless the event says
    # Consolidation of episodes into facts: off unless an LLM server is named.
    llm_url: str = ""
    llm_model: str = ""
    llm_api: str = "ollama"  # or "openai" (any OpenAI-compatible server)
    llm_api_key_env: str = ""  # the variable holding the key: never the key itself
    llm_timeout: float = 60.0
    # Where each tier's index lives (``sidecar.stores``): empty means the SQLite file in
    # the tier's folder; a postgresql:// URL a shared database, under a namespace.
    store: str = ""
    agent_store: str = ""
    crew_store: str = ""
    namespace: str = ""

    def __post_init__(self) -> None:
        # Watcher events carry absolute, resolved paths; compare like with like.
        object.__setattr__(self, "agent_dir", self.agent_dir.expanduser().resolve())
        object.__setattr__(self, "crew_dir", self.crew_dir.expanduser().resolve())
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {self.role!r}")
        if self.embedder not in EMBEDDERS:
            raise ValueError(
                f"embedder must be one of {', '.join(EMBEDDERS)}, not {self.embedder!r}"
            )
        if self.embed_threads < 1:
            raise ValueError(f"embed threads must be at least 1, not {self.embed_threads}")
        if self.reconcile_interval <= 0:
            raise ValueError("reconcile interval must be positive")
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
