"""Restated facts: does recall put a fact's newer statement above its older one?

Each pair is an older event stating a fact and a newer one restating or updating
it, worded differently (the newer is often not a lexical superset of the older,
and sometimes shares fewer words with the question), and a question about the
fact. The questions lean neither way on the whole: about a third share more words
with the older statement, a third with the newer, the rest as many with each
(``lexical_lean`` counts them, and the report shows it). Written for this
benchmark; nothing here comes from LoCoMo. All pairs go
into one journal with about 200 distractor events on the same subjects, and each
question is asked once per ranking: a pair counts when its newer event ranks
above its older one (an event missing from the hits ranks below every hit).
"""

from __future__ import annotations

import datetime as dt
import random
import re
import time
from dataclasses import dataclass
from typing import Any

TYPE = "agent.observation"
RECALL_K = 50
DISTRACTORS = 200


@dataclass(frozen=True, slots=True)
class Pair:
    older: str
    newer: str
    query: str


PAIRS: tuple[Pair, ...] = (
    Pair("The staging deploy target is eu-west-1.",
         "Staging deploy target region changed to eu-west-2.",
         "Which region is the staging deploy target?"),
    Pair("Ana Kowalski is the on-call lead for the payments team.",
         "Payments team on-call lead rotated to Tomas Reyes this week.",
         "Who is the on-call lead for the payments team?"),
    Pair("The Postgres primary runs version 14.9.",
         "Upgraded the primary to Postgres version 16.2 last night.",
         "What Postgres version is the primary on?"),
    Pair("The API rate limit for partner keys is 500 requests per minute.",
         "Partner keys are throttled at 1,200 rpm since the contract renewal.",
         "What is the partner API rate limit?"),
    Pair("Nightly backups run at 02:00 UTC.",
         "Nightly backups moved to 04:30 UTC so they stop colliding with batch jobs.",
         "What time are the nightly backups?"),
    Pair("Design review is on Tuesdays at 10am.",
         "The design review meeting moved to Thursday mornings.",
         "When is the design review meeting?"),
    Pair("Feature flag new-checkout is enabled for 10% of users.",
         "new-checkout flag rollout widened to half of all users.",
         "What share of users get the new-checkout flag?"),
    Pair("Customer Globex prefers to be contacted by email.",
         "Globex asked that we phone their ops desk rather than write.",
         "How should we contact Globex?"),
    Pair("The CI pipeline builds with Node 18.",
         "CI images were bumped to Node 20 LTS.",
         "Which Node version does CI use?"),
    Pair("Maximum upload size on the media service is 25 MB.",
         "Media service upload limit raised to 100 MB.",
         "What is the upload size limit for media?"),
    Pair("The search cluster has 3 data nodes.",
         "Added two more data nodes to the search cluster, five in total.",
         "How many data nodes does the search cluster have?"),
    Pair("The release freeze starts on December 15.",
         "The release freeze now starts December 20 instead.",
         "When does the release freeze start?"),
    Pair("Invoices go out from billing@acme.example.",
         "Billing emails now go out from accounts@acme.example.",
         "Which address sends the billing emails?"),
    Pair("The user's preferred programming language is Python.",
         "User switched their project to Rust and wants examples in Rust from now on.",
         "What programming language does the user prefer?"),
    Pair("Session timeout for the admin console is 30 minutes.",
         "Admin console session timeout cut to 10 idle minutes.",
         "What is the admin console session timeout?"),
    Pair("The ML training job runs on 4 A100 GPUs.",
         "Training moved to a node with 8 H100s.",
         "Which GPUs does the training job use?"),
    Pair("Log retention is 14 days.",
         "We keep logs for 90 days under the new compliance policy.",
         "How long are logs retained?"),
    Pair("Infra alerts are posted to the #infra-alerts Slack channel.",
         "Infra alerts now go to #platform-oncall on Slack; the old channel is archived.",
         "Which Slack channel gets infra alerts?"),
    Pair("Kafka topic orders has 12 partitions.",
         "Repartitioned orders to 48 partitions for the holiday peak.",
         "How many partitions does the orders topic have?"),
    Pair("DNS is on Route 53.",
         "DNS is now hosted on Cloudflare.",
         "Where is our DNS hosted?"),
    Pair("The mobile app supports iOS 15 and later.",
         "Dropped iOS 15; the mobile app now needs iOS 16 at minimum.",
         "What is the minimum iOS version for the mobile app?"),
    Pair("Our contact at the CDN vendor is Raj Patel.",
         "Lena Fischer is our new account manager at the CDN provider since Raj left.",
         "Who is our contact at the CDN vendor?"),
    Pair("Redis cache TTL for product pages is 5 minutes.",
         "Product page cache entries now live for an hour.",
         "What is the cache TTL for product pages?"),
    Pair("Standup is at 9:30.",
         "Daily standup moved to 9:00 to suit the new Sydney hires.",
         "What time is the daily standup?"),
    Pair("The user lives in Lisbon.",
         "The user now lives in Berlin; they relocated last month.",
         "Where does the user live?"),
    Pair("The checkout SLO error budget is 0.1% of requests.",
         "Checkout availability objective loosened to 99.5%.",
         "What is the checkout SLO error budget?"),
    Pair("Passwords must be rotated every 90 days.",
         "Passwords must now be rotated monthly.",
         "How often must passwords be rotated?"),
    Pair("Our warehouse is Redshift.",
         "Finished moving the data warehouse to BigQuery.",
         "Which data warehouse do we use?"),
    Pair("The Q3 cloud spend budget is $40k.",
         "Finance raised the Q3 cloud spend budget to $55k.",
         "What is the Q3 cloud spend budget?"),
    Pair("Ticket triage is owned by Sam.",
         "Priya took over ticket triage.",
         "Who owns ticket triage?"),
    Pair("Terraform state lives in the S3 bucket tf-state-prod.",
         "Terraform state moved to Terraform Cloud workspaces.",
         "Where is the Terraform state stored?"),
    Pair("The user's manager is Dana.",
         "After the reorg the user reports to Kofi.",
         "Who is the user's manager?"),
    Pair("Webhooks are retried 3 times with a one minute backoff.",
         "Webhook delivery now makes up to 8 attempts with exponential backoff.",
         "How many times are webhooks retried?"),
    Pair("Initech is on Starter.",
         "Initech upgraded to the Enterprise plan.",
         "What plan is Initech on?"),
    Pair("Merging to main requires one approval.",
         "Merging to main now requires two reviewer approvals.",
         "How many approvals are needed to merge to main?"),
    Pair("The load balancer idle timeout is 60 seconds.",
         "Raised LB idle timeout to 350 s for long-polling clients.",
         "What is the load balancer idle timeout?"),
    Pair("We deploy to production on Wednesdays.",
         "Production releases happen Mondays and Thursdays now.",
         "Which day do we deploy to production?"),
    Pair("The staging database is refreshed from prod weekly.",
         "Staging DB refresh runs every night since QA asked for it.",
         "How often is the staging database refreshed?"),
    Pair("The service mesh is Linkerd.",
         "Our service mesh is now Istio; Linkerd was replaced across all clusters.",
         "Which service mesh do we run?"),
    Pair("Support runs 9 to 5 CET.",
         "Support hours are now 24/7 with the follow-the-sun rota.",
         "What are the support hours?"),
    Pair("The container base image is Debian bullseye.",
         "Base images rebuilt on bookworm.",
         "Which Debian release is the container base image?"),
    Pair("The analytics dashboard refreshes every hour.",
         "Dashboard numbers are near real time now, updated every 5 minutes.",
         "How often does the analytics dashboard refresh?"),
    Pair("User prefers VS Code.",
         "The user's favourite editor is Neovim again, full time.",
         "Which editor does the user use?"),
    Pair("Kubelet max pods per node is 110.",
         "The new node pool allows 250 pods on each node.",
         "What is the max pods per node?"),
    Pair("The team's sprint length is two weeks.",
         "We switched to one-week sprints; a sprint now lasts a week.",
         "How long is a sprint?"),
    Pair("Errors go to Sentry.",
         "Error tracking moved to Rollbar since the Sentry contract lapsed.",
         "Which tool do we use for error tracking?"),
)  # fmt: skip

_SUBJECTS = (
    "staging", "region", "payments", "on-call", "Postgres", "rate limit", "backups",
    "design review", "new-checkout", "Globex", "CI pipeline", "media uploads", "search cluster",
    "release freeze", "billing emails", "Rust", "admin console", "training job", "log retention",
    "Slack alerts", "Kafka orders topic", "DNS", "iOS app", "CDN", "Redis cache", "standup",
    "Berlin office", "checkout SLO", "password rotation", "data warehouse", "cloud budget",
    "ticket triage", "Terraform", "the reorg", "webhooks", "Initech", "main branch",
    "load balancer", "deploy schedule", "staging database", "service mesh", "support rota",
    "base images", "analytics dashboard", "editor setup", "node pool", "sprint planning",
    "error tracking",
)  # fmt: skip
_DISTRACTOR_TEMPLATES = (
    "Reviewed a pull request touching {subject}; left two comments.",
    "{person} asked a question about {subject} in the team channel.",
    "Ran the test suite after changes near {subject}: all green.",
    "Opened a ticket to document {subject} properly.",
    "Meeting notes: discussed {subject} and {other}, no decision yet.",
    "The dashboard for {subject} showed a brief spike around noon.",
    "{person} shared a link about {subject} best practices.",
    "Paired with {person} on a bug unrelated to {subject}.",
    "Cleaned up stale branches mentioning {subject}.",
    "Alert about {other} auto-resolved after two minutes.",
    "Drafted a proposal comparing options for {subject}.",
    "{person} is out on Friday; {other} questions go to the channel.",
)  # fmt: skip
_PEOPLE = ("Marco", "Chen", "Aisha", "Yuki", "Ravi", "Sofia", "Omar", "Hana", "Jonas", "Mei")
_DISTRACTOR_TYPES = ("agent.observation", "tool.call", "meeting.note", "peer.message")


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class Planted:
    """Where each pair's events are: indexes into the event list."""

    older: list[int]
    newer: list[int]


def journal_events(
    seed: int = 11, now: float | None = None
) -> tuple[list[dict[str, Any]], Planted]:
    """Every pair (older 25-90 days ago, newer 1-10 days ago) and the distractors
    (0-120 days ago), shuffled; all tagged ``refs.episodic`` so a hybrid daemon embeds them."""
    rng = random.Random(seed)
    now = time.time() if now is None else now
    day = 86400.0
    rows: list[tuple[str, dict[str, Any]]] = []
    for i, pair in enumerate(PAIRS):
        old_age = rng.uniform(25, 90) * day
        new_age = rng.uniform(1, 10) * day
        for tag, text, age in (("o", pair.older, old_age), ("n", pair.newer, new_age)):
            rows.append(
                (
                    f"{tag}{i}",
                    {
                        "type": TYPE,
                        "summary": text,
                        "ts": _iso(now - age),
                        "refs": {"episodic": True},
                    },
                )
            )
    for _ in range(DISTRACTORS):
        subject, other = rng.sample(_SUBJECTS, 2)
        text = rng.choice(_DISTRACTOR_TEMPLATES).format(
            subject=subject, other=other, person=rng.choice(_PEOPLE)
        )
        rows.append(
            (
                "d",
                {
                    "type": rng.choice(_DISTRACTOR_TYPES),
                    "summary": text,
                    "ts": _iso(now - rng.uniform(0, 120) * day),
                    "refs": {"episodic": True},
                },
            )
        )
    rng.shuffle(rows)
    older, newer = [0] * len(PAIRS), [0] * len(PAIRS)
    for pos, (tag, _) in enumerate(rows):
        if tag != "d":
            (older if tag[0] == "o" else newer)[int(tag[1:])] = pos
    return [event for _, event in rows], Planted(older, newer)


@dataclass(frozen=True, slots=True)
class PairOutcome:
    pair: int
    newer_rank: int | None  # 1-based, None when not in the hits
    older_rank: int | None

    @property
    def newer_first(self) -> bool:
        if self.newer_rank is None:
            return False
        return self.older_rank is None or self.newer_rank < self.older_rank


def outcome(pair: int, hit_ids: list[str], newer_id: str, older_id: str) -> PairOutcome:
    where = {hid: rank for rank, hid in enumerate(hit_ids, start=1)}
    return PairOutcome(pair, where.get(newer_id), where.get(older_id))


def share(outcomes: list[PairOutcome]) -> float:
    return sum(o.newer_first for o in outcomes) / len(outcomes) if outcomes else float("nan")


_WORD = re.compile(r"\w+")
_STOP = frozenset(
    "a an and are as at be by do does for from how in is it many much of on or our the to "
    "we what when where which who with".split()
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def lean(pair: Pair) -> str:
    """Whether the question shares more words with the older statement, the newer, or neither."""
    q = _words(pair.query)
    older, newer = len(q & _words(pair.older)), len(q & _words(pair.newer))
    return "older" if older > newer else "newer" if newer > older else "even"


def lexical_lean() -> dict[str, int]:
    """How many questions lean each way."""
    out = {"older": 0, "newer": 0, "even": 0}
    for pair in PAIRS:
        out[lean(pair)] += 1
    return out


def by_lean(outcomes: list[PairOutcome]) -> str:
    """Newer-first counts split by the question's lean, e.g. ``older 2/15``."""
    parts = []
    for side in ("older", "even", "newer"):
        mine = [o for o in outcomes if lean(PAIRS[o.pair]) == side]
        parts.append(f"{side} {sum(o.newer_first for o in mine)}/{len(mine)}")
    return ", ".join(parts)
