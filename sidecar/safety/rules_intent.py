# ruff: noqa: RUF003 - quotation marks of other languages are what the quote rule reads
"""The intent rules, as data: verb-object shapes rather than fixed sentences.

Each rule here pairs an action (drop your rules, send, copy, delete, run) with
the object that makes it an attack (your instructions, a credential variable or
file, the home or memory folder, a downloaded script), so rephrasing, another
tool or another argument form still matches. :mod:`sidecar.safety.rules` puts
them in the rule table; :mod:`sidecar.safety.intent` runs them.

Every anchor of these rules starts a word (or is punctuation followed by one):
a text none of whose words starts like an anchor skips that anchor's search
(see ``rules.WORD_ANCHORS``), which keeps a hundred more anchors cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sidecar.safety import lazy_re
from sidecar.safety.rules_i18n import LANGS, Lang

_I = re.IGNORECASE

# --- the shapes the intent checks take ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Foreign:
    """An override order in another language (see :mod:`sidecar.safety.rules_i18n`)."""

    langs: tuple[Lang, ...]


@dataclass(frozen=True, slots=True)
class Quoted:
    """An override order inside quotes, backticks, a link title or an HTML attribute.

    Each quoted run holding one of ``anchors`` is scanned on its own by the
    override rules that run before this one. An attribute value or link title
    counts as given; a quotation counts unless the sentence around it names it
    (``mention`` before it) and nothing after it says to act on it (``act_on``),
    and only when the quoted order goes on past the override phrase (``goes_on``, searched
    from a little after the first anchor).
    """

    anchors: tuple[bytes, ...]
    segment: re.Pattern[str]
    attribute: re.Pattern[str]
    mention: re.Pattern[str]
    act_on: re.Pattern[str]
    goes_on: re.Pattern[str]


@dataclass(frozen=True, slots=True)
class Authority:
    """A claim of authority and, in the same paragraph, an order to drop a safeguard.

    ``directive`` is looked for at ``anchors``; ``claim`` must match in the
    paragraph; ``negated`` on the text before the directive (same clause) clears it.
    """

    anchors: tuple[bytes, ...]
    directive: re.Pattern[str]
    claim: re.Pattern[str]
    claim_hints: tuple[str, ...]
    negated: re.Pattern[str]


@dataclass(frozen=True, slots=True)
class LineOpen:
    """A line opening with ``regex`` (which may read on into the following lines)."""

    anchors: tuple[bytes, ...]
    regex: re.Pattern[str]


@dataclass(frozen=True, slots=True)
class Exchange:
    """A scripted chat: a user-turn line and an assistant-turn line agreeing to drop a safeguard."""

    user_turn: re.Pattern[str]
    complies: re.Pattern[str]
    anchors: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class Transfer:
    """A credential file sent off the machine by a transfer tool.

    On a shell line running ``tool``, a ``path`` that is read locally (not
    ``host:path``) and then either sent by an upload flag (``upload``), piped to
    a sender (``piped``), or followed by a ``remote`` destination.
    """

    anchors: tuple[bytes, ...]
    tool: re.Pattern[str]
    path: re.Pattern[str]
    upload: re.Pattern[str]
    piped: re.Pattern[str]
    remote: re.Pattern[str]


@dataclass(frozen=True, slots=True)
class Destructive:
    """A destructive or remote-code command (or order in prose) addressed to the agent.

    ``regex`` is tried on the lines holding ``anchors``. A note that forbids,
    narrates or describes it (``DOCUMENTED``, ``DESCRIBED``) passes; with
    ``cue``, the line must also carry it (an unencrypted or bare-IP URL, or
    urgency aimed at the agent). Text decoded from an encoding is judged
    without these excuses.
    """

    anchors: tuple[bytes, ...]
    regex: re.Pattern[str]
    cue: re.Pattern[str] | None = None
    needs: tuple[str, ...] = ()  # one of these must be on the line before ``regex`` runs


IntentCheck = Foreign | Quoted | Authority | LineOpen | Exchange | Transfer | Destructive

# --- instruction override: other languages, quotes, forged authority, fake turns ---------------

FOREIGN = Foreign(LANGS)

_QUOTE_ANCHORS = (b"ignor", b"disregard", b"forget", b"override", b"bypass", b"oubli", b"olvid",
                  b"vergiss", b"esque", b"dimentic", b"negeer", b"pay no", b"set aside",
                  b"put aside", b"discard", b"abandon", b"dismiss", b"drop", b"stop follow",
                  b"no longer")  # fmt: skip
QUOTED = Quoted(
    _QUOTE_ANCHORS,
    # "...", '...', “...”, ‘...’, «...», „...“, `...`, ``...``
    lazy_re.compile(
        r"(?<![\w'])'([^'\n]{6,400})'(?![\w'])|\"([^\"\n]{6,400})\"|\u201c([^\u201d\n]{6,400})\u201d"
        r"|\u2018([^\u2019\n]{6,400})\u2019|\u00ab([^\u00bb\n]{6,400})\u00bb"
        r"|\u201e([^\u201c\u201d\n]{6,400})[\u201c\u201d]|``([^`\n]{6,400})``|`([^`\n]{6,400})`"
        r"|\u2039([^\u203a\n]{6,400})\u203a"
    ),
    # an HTML attribute (name=) or a markdown link or image title (](url "...")
    lazy_re.compile(r"(?:\b[\w:-]+\s*=\s*|\]\(\s*<?\S+>?\s+)\Z"),
    lazy_re.compile(
        r"\b(?:like|such\s+as|e\.?g\.?|i\.e\.?|says?|said|saying|wrote|writes|reads?|string|"
        r"strings|phrases?|patterns?|text|examples?|payloads?|quote[sd]?|called|named|titled|"
        r"flags?|flagged|detects?|detected|blocks?|blocked|contain(?:s|ed|ing)?|includes?|"
        r"matches|matching|injections?|attacks?|attackers?|paper|assert\w*|scan|message|"
        r"commit|title|tooltip|errors?|logs?|literal|classic|common|typical|try|tried|tries|"
        r"asked|asks|told|replied|answered|typed|entered|submitted)\b[^.!?\n]*\Z",
        _I,
    ),
    lazy_re.compile(
        r"[^.!?\n]{0,80}\b(?:do\s+(?:what|as)\s+it\s+(?:says|tells\s+you)|follow\s+it|obey\s+it|"
        r"act\s+on\s+it|comply|carry\s+it\s+out)\b",
        _I,
    ),
    lazy_re.compile(
        r"(?:[,;:.!\u2014\u2013\uff0c\u3001]|\s(?:and|then|&|et|y|und|e|и)\s)\s*[^\W\d_]{2,}", _I
    ),
)

# Forged authority: who claims to speak, and what they order.
_AUTHORITY_WHO = (
    r"(?:operator|(?:system\s+)?administrator|sys-?admin|admins?|administration|security(?:\s+team)?|"
    r"soc|it(?:\s+security|\s+department)|platform(?:\s+(?:team|admins?))?|compliance(?:\s+team)?|"
    r"management|vendor|support|anthropic|openai|google|microsoft|github|trust\s*(?:&|and)\s*safety|"
    r"(?:the\s+)?system|your\s+(?:developers?|creators?|owner)|ciso|cto|ceo|cio|it\s+support|"
    r"help\s*desk|legal|security\s+officer|on-?call\s+lead|(?:system|repo(?:sitory)?|project|"
    r"account|platform|workspace)\s+owner)"
)
_CLAIM = lazy_re.compile(
    # "NOTICE FROM THE OPERATOR", "Message from Anthropic", "Per management", "[Administrator]"
    rf"\b(?:from|by|per|of)\s+(?:the\s+|your\s+)?{_AUTHORITY_WHO}\b"
    rf"|(?:^|[\[(\s*_>#])(?:the\s+)?{_AUTHORITY_WHO}(?:'s)?(?:\s*\([^()\n]{{1,40}}\))?\s*(?:\]|\)|:|[-\u2014\u2013]|(?:\s+\w+){{0,2}}\s+"
    r"(?:notice|message|update|directive|order|policy|announcement|advisory|instruction|override|"
    r"rule|memo|note|speaking)s?\b|\s+(?:has|have)\s+(?:authori[sz]ed|approved|cleared|"
    r"granted|lifted|suspended|disabled)|\s+requires?\b)"
    r"|\b(?:official|authori[sz]ed|approved)\s+(?:by\s+)?(?:\w+\s+){0,2}?(?:instruction|"
    r"directive|order|notice|policy|exemption)"
    r"|\bnew\s+(?:rule|policy|directive)\b|\beffective\s+immediately\b"
    rf"|\b(?:as|i\s+am|this\s+is)\s+(?:your|the)\s+{_AUTHORITY_WHO}\b"
    r"|\bI\s+(?:hereby\s+)?(?:authori[sz]e|permit|allow|order|instruct|clear)\s+you\b",
    _I | re.MULTILINE,
)
_CLAIM_HINTS = (
    "operator", "admin", "security", "soc", "it ", "platform", "compliance", "management",
    "vendor", "support", "anthropic", "openai", "google", "microsoft", "github", "safety",
    "system", "developer", "creator", "owner", "official", "authori", "approved", "new rule",
    "new policy", "new directive", "effective immediately",
)  # fmt: skip
_SAFEGUARD = (
    r"(?:rules|policies|guidelines|guardrails|restrictions|safety(?:\s+(?:checks|rules|"
    r"filters|measures|policies))?|safeguards|content\s+(?:guidelines|policy|policies)|filters|"
    r"limits|limitations|constraints|system\s+prompt)"
)
_APPROVAL = (
    r"(?:approvals?|approval\s+(?:steps?|gates?|workflow|process|requirements?|checks?)|"
    r"confirmations?|confirmation\s+(?:prompts?|steps?)|(?:human|code|peer)\s+review|reviews?|"
    r"human[\s-]in[\s-]the[\s-]loop|sign-?offs?|permission(?:\s+checks?)?|user\s+confirmation)"
)
_FROM_MEMORY = (
    r"(?:(?:found|stored|written|contained|embedded|given|listed|placed)\s+)?(?:in|inside|from|"
    r"within)\s+(?:this\s+|these\s+|the\s+|your\s+|any\s+)?(?:memory|memories|notes?|files?|"
    r"memory\s+files?|retrieved\s+documents?|documents?|this\s+file|notes\s+below)"
)
AUTHORITY = Authority(
    (
        b"approv",
        b"confirm",
        b"review",
        b"human",
        b"permission",
        b"instruction",
        b"rules",
        b"polic",
        b"guideline",
        b"guardrail",
        b"restriction",
        b"safety",
        b"memory",
        b"notes",
        b"directive",
        b"command",
        b"request",
        b"exempt",
        b"sign-off",
        b"signoff",
        b"merge queue",
        b"bypass",
        b"checks",
        b"branch protection",
    ),
    lazy_re.compile(
        # obey what memory says
        r"\b(?:follow|obey|execute|run|act\s+on|comply\s+with|carry\s+out|do|trust)\s+(?:\w+\s+){0,3}?"
        r"(?:instructions?|commands?|requests?|orders?|directives?|everything|whatever|anything)"
        r"\s+(?:\w+\s+){0,2}?"
        + _FROM_MEMORY
        + r"|\b(?:instructions?|notes?|commands?)\s+(?:\w+\s+){0,3}?"
        + _FROM_MEMORY
        + r"\s+(?:take|takes|have|has)\s+(?:priority|precedence)"
        r"|\b(?:memory|memory\s+notes?|notes?|this\s+file)\s+(?:outranks?|overrides?|supersedes?|"
        r"take\s+priority\s+over)\b"
        r"|\b(?:whatever|anything|everything)\s+(?:the\s+|this\s+|these\s+)?(?:memory|notes?|file)"
        r"\s+(?:says|tells\s+you|asks|instructs|contains)"
        r"|\btreat\s+(?:everything|anything|all|the\s+\w+)\s+(?:\w+\s+){0,4}?as\s+(?:an?\s+)?"
        r"(?:system|authoritative|trusted|operator)"
        # skip approvals
        r"|\b(?:skip|bypass|ignore|disregard|disable|waive|suspend|drop|circumvent)\s+(?:the\s+|all\s+|"
        r"any\s+|every\s+|your\s+)?(?:\w+\s+)?(?:" + _APPROVAL + r"|merge\s+queues?|(?:required\s+|"
        r"status\s+|ci\s+)?checks|ci|gates?|branch\s+protection|tests|process(?:es)?)\b"
        r"|\b(?:no\s+longer\s+(?:need|require)|without)\s+(?:any\s+|the\s+|asking\s+(?:for\s+)?)?"
        r"(?:\w+\s+)?" + _APPROVAL + r"\b"
        r"|\b" + _APPROVAL + r"\s+(?:are|is)\s+(?:now\s+)?(?:suspended|disabled|waived|off|"
        r"not\s+required|no\s+longer\s+(?:required|needed))\b"
        r"|\bcleared\s+to\s+\w+\s+without\b"
        r"|\b(?:do\s+not|don'?t|no\s+need\s+to)\s+ask\s+(?:for\s+)?(?:approval|permission|"
        r"confirmation)"
        # suspend your rules
        r"|\b(?:your|the\s+agent'?s|the\s+assistant'?s|its|their|usual|all)\s+(?:\w+\s+)?"
        + _SAFEGUARD
        + r"\s+(?:are|is)\s+(?:now\s+|hereby\s+|temporarily\s+)?(?:suspended|paused|"
        r"lifted|disabled|turned\s+off|waived|relaxed|off|void)"
        r"|\b(?:suspend(?:ed)?|paused?|lift(?:ed)?|disabled?|relax(?:ed)?|turn(?:ed)?\s+off|waived?|"
        r"switch(?:ed)?\s+off)\s+(?:all\s+)?"
        r"(?:your|the|its|usual|all)\s+(?:usual\s+)?"
        + _SAFEGUARD
        + r"|\bexempt(?:ed)?\s+from\s+(?:\w+\s+){0,2}?"
        + _SAFEGUARD,
        _I,
    ),
    _CLAIM,
    _CLAIM_HINTS,
    lazy_re.compile(
        r"\b(?:never|not|n't|cannot|no\s+one|nobody|must\s+not|mustn't|don't)\b[^.;:!?\n]*\Z", _I
    ),
)

# Fake turns: chat-template tokens opening a turn, a fake end of the memory
# block, a role heading followed by orders. A token named mid-sentence or in
# backticks ("ChatML uses `<|im_start|>`") passes.
_TOKEN = (
    r"<\|(?:im_start|im_end|system|user|assistant|start_header_id|end_header_id|eot_id|"
    r"endoftext|begin_of_text)\|>|<</?SYS>>|\[/?INST\]|<(?:start|end)_of_turn>"
)
_ROLE_WORDS = r"(?:system|user|assistant|model|developer|human)"
_CLOSING = (
    r"</(?:memory|memories|memory[-_]block|context|documents?|notes|system|instructions|"
    r"user_input|untrusted[\w-]*)>"
    r"|\[(?:END|/)\s*(?:OF\s+)?(?:MEMORY|MEMORIES|NOTES|CONTEXT)[\w ]*\]"
    r"|[-=#*\s]*end\s+of\s+(?:the\s+)?(?:memory|memories|memory\s+block|notes|context|"
    r"retrieved\s+(?:context|documents?)|system\s+prompt|user\s+input)[-=#*\s]*$"
    r"|<(?:system|instructions)(?:[-_][\w-]+)?>(?![ \t]+(?:is|are|was|were|tags?|elements?)\b)"
)
# The frame markers of the memory block (``sidecar.context.block``, which this layer
# cannot import; a test checks the list covers every marker the block renders). One
# in memory text would close the block it sits in or open another as if the daemon had.
_BLOCK_NAMES = (
    "INSTITUTIONAL LEARNINGS", "AGENT MEMORY", "CREW SHARED MEMORY", "OPERATOR MODEL",
    "LEARNINGS", "KNOWN FACTS", "RELEVANT MEMORY", "MEMORY INSTRUCTIONS",
)  # fmt: skip
BLOCK_MARKERS = (
    *(f"[{name}]" for name in _BLOCK_NAMES),
    *(f"[END {name}]" for name in _BLOCK_NAMES),
    "[MEMORY NUDGE]",
    "<recalled-memory>",
    "</recalled-memory>",
)
# In capitals, as the block writes them: "[learnings]" opening a TOML table is no marker.
_BLOCK_MARKER = (
    r"(?:(?-i:\[(?:END\s+)?(?:"
    + "|".join(n.replace(" ", r"\s+") for n in _BLOCK_NAMES)
    + r"|MEMORY\s+NUDGE)\])(?![:(])|</?recalled-memory\b[^<>\n]*>)"
)
_ADDRESSED = (
    r"(?:you|your|the\s+assistant|assistant|ignore|disregard|forget|from\s+now|always|never|"
    r"respond|answer|act|new\s+instructions|follow|obey|prioriti[sz]e|comply|the\s+agent)\b"
)
TEMPLATE_LINE = LineOpen(
    (
        b"<|",
        b"<<sys",
        b"<</sys",
        b"[inst",
        b"[/inst",
        b"_of_turn>",
        b"</",
        b"[end",
        b"[/",
        b"end of",
        b"<system",
        b"<instructions",
        b"# system",
        b"#system",
        b"# new system",
        b"# instruction",
        b"#instruction",
        b"[system",
        # the block markers ("[end" is above)
        *(b"[institutional", b"[agent", b"[crew", b"[operator", b"[learnings", b"[known"),
        *(b"[relevant", b"[memory", b"recalled-memory"),
    ),
    lazy_re.compile(
        r"[ \t>*-]*(?:"
        + _TOKEN
        + r")"
        + r"|[ \t>*-]*(?:"
        + _CLOSING
        + r"|"
        + _BLOCK_MARKER
        + r")"
        # "### SYSTEM:" or "## System prompt", then an order on that line or the next
        + r"|[ \t]*#{1,6}[ \t]*(?-i:Instruction|Response)[ \t]*:[ \t]*\n[ \t]*\S"
        + r"|[ \t]*#{1,6}[ \t]*(?:new\s+)?(?:system(?:\s+(?:prompt|message))?|instructions?)"
        r"[ \t]*:?[ \t]*(?:\n[ \t]*)?(?:\*\*)?"
        + _ADDRESSED
        # Bing-style "[system](#context)"
        + r"|[ \t]*\["
        + _ROLE_WORDS
        + r"\]\(#[\w-]+\)",
        _I | re.MULTILINE,
    ),
)
# "BEGIN NEW SYSTEM PROMPT", "here is your real system prompt", "Updated system message:".
SYSTEM_PROMPT_ANCHORS = (b"system prompt", b"system message", b"system instruction")
SYSTEM_PROMPT = lazy_re.compile(r"system\s+(?:prompt|message|instructions)\b", _I)
SYSTEM_PROMPT_COLON = lazy_re.compile(r"system\s+(?:prompt|message|instructions)\s*:", _I)
OPENS_SYSTEM_PROMPT = lazy_re.compile(
    r"\b(?:begin(?:ning)?|start(?:ing)?|here\s+is|below\s+is|end)(?:\s+of)?\s+(?:the\s+|a\s+|"
    r"your\s+)?(?:(?:new|updated|revised|real|actual)\s+)?\Z",
    _I,
)
OPENS_HINTS = ("begin", "start", "here is", "below is", "end")
NEW_SYSTEM_PROMPT = lazy_re.compile(r"\b(?:new|updated|revised|real)\s+\Z", _I)
NEW_HINTS = ("new", "updated", "revised", "real")
EXCHANGE = Exchange(
    lazy_re.compile(
        r"^[ \t>*-]*(?:\*\*)?(?:user|human|customer|me|q)(?:\*\*)?[ \t]*:", _I | re.MULTILINE
    ),
    lazy_re.compile(
        r"^[ \t>*-]*(?:\*\*)?(?:assistant|ai|model|bot|gpt|claude|agent|a)(?:\*\*)?[ \t]*:[ \t]*"
        r"(?:(?:sure|ok(?:ay)?|understood|of\s+course|certainly|absolutely|done|alright|will\s+do|"
        r"yes|as\s+requested|got\s+it)\b[^\n]{0,80}?|[^\n]{0,20}?)"
        r"(?:\b(?:i\s+will|i'll|i\s+have|i've|from\s+now\s+on)\b[^\n]{0,60}?\b(?:ignore|bypass|"
        r"skip|disable[sd]?|without\s+(?:asking|approval|confirmation|checking)|any\s+command|"
        r"reveal|no\s+(?:rules|restrictions|limits))"
        r"|\bmy\s+(?:rules|restrictions|safety\s+checks|guidelines|filters|guardrails)\s+(?:are|"
        r"have\s+been)\s+(?:now\s+)?(?:disabled|off|gone|suspended|lifted)"
        r"|\bi\s+(?:no\s+longer|don'?t|do\s+not|won'?t)\s+(?:have|keep|follow|need|obey)\s+(?:any\s+)?"
        r"(?:rules|restrictions|secrets|limits|filters|guidelines))",
        _I | re.MULTILINE,
    ),
    (b"assistant", b"ai:", b"model", b"bot", b"gpt", b"claude", b"agent", b"a:"),
)

# --- exfiltration -------------------------------------------------------------------------------

# A variable whose name says it holds a credential, in any shell or language's syntax.
_CRED_NAME = (
    r"[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|APIKEY|PRIVATE_KEY)[A-Za-z0-9_]*"
    r"|(?:[A-Za-z0-9]+_)*(?:KEY|KEYS|PAT|PWD|PASS|CREDS|AUTH)(?:_[A-Za-z0-9]+)*(?![A-Za-z0-9])"
)
CRED_VAR = lazy_re.compile(
    r"(?:\$\{?|\$env:|%|\bprintenv\s+|\bgetenv\(\s*['\"]|\bos\.environ(?:\.get)?[\[(]\s*['\"]|"
    r"\bprocess\.env\.|\bprocess\.env\[\s*['\"]|\bENV\[\s*['\"])(?-i:" + _CRED_NAME + r")",
    _I,
)
CRED_HINTS = ("key", "token", "secret", "pass", "credential", "pat", "pwd", "creds", "auth")
# How a credential is meant to travel: an auth header, a user:password pair, an
# OAuth client secret, an API key in a query to an API host.
AUTH_ONLY = lazy_re.compile(
    r"(?:-H|--header)(?:\s+|=)(['\"]?)(?:authorization|proxy-authorization|x-api-key|api-key|"
    r"x-auth-token|private-token|x-vault-token|x-api-token|apikey|x-goog-api-key|x-figma-token|"
    r"circle-token|x-jfrog-art-api)\s*:[^'\"\n]*\1"
    r"|(?:-u|--user|--oauth2-bearer|--proxy-user)(?:\s+|=)(?:\"[^\"\n]*\"|'[^'\n]*'|\S+)"
    r"|\bclient_secret=\S+|headers\s*=\s*\{[^}\n]*\}|\bauth\s*=\s*\([^)\n]*\)"
    r"|https://(?:api\.|[\w.-]*googleapis\.com)[^\s'\"]*[?&](?:key|api_?key)=\$\{?\w+\}?",
    _I,
)
NET_EXTRA = lazy_re.compile(
    r"\b(?:curl|wget|nc|ncat|netcat|socat|ftp|tftp|sftp|Invoke-WebRequest|Invoke-RestMethod|iwr|irm|"
    r"urlopen|httpie)\b|\bhttps?\s+(?:-\S+\s+)*(?:GET|POST|PUT|PATCH)\b|/dev/(?:tcp|udp)/|\.(?:post|"
    r"put|request)\(|\.get\((?=[^)\n]*(?:https?:|url|endpoint|host))|\bfetch\(|\bXMLHttpRequest\b|"
    r"\bsendBeacon\(",
    _I,
)
NET_EXTRA_ANCHORS = (b"curl", b"wget", b"nc ", b"invoke-", b"iwr", b"irm", b"/dev/", b"post(",
                     b"put(", b"get(", b"fetch(", b"urlopen", b"http ", b"socat", b"ftp",
                     b"sftp", b"sendbeacon", b"request(")  # fmt: skip

_HOME = r"(?:~|\$HOME|\$\{HOME\}|%USERPROFILE%|/root|/home/[\w.-]+|/Users/[\w.-]+)"
CRED_FILE = lazy_re.compile(
    r"(?:"
    + _HOME
    + r"/)?\.ssh(?:/(?:id_[\w-]+(?![\w-]|\.pub)|[\w.-]+_key(?![\w-]|\.pub)|[\w.-]+\.pem))?"
    r"/?(?=[\s'\"`|;)&]|$)"
    r"|(?:" + _HOME + r"/)?\.aws(?:/(?:credentials|config|sso/cache[\w/.-]*))?/?(?=[\s'\"`|;)&]|$)"
    r"|(?:" + _HOME + r"/)?\.(?:netrc|git-credentials|npmrc|pypirc|pgpass|docker/config\.json|"
    r"kube/config|config/gcloud(?:/[\w./-]*)?|azure(?:/[\w./-]*)?|config/gh/hosts\.ya?ml|"
    r"vault-token|terraform\.d/credentials\.tfrc\.json)(?![\w-])"
    r"|/etc/(?:kubernetes/admin\.conf|rancher/k3s/k3s\.yaml|shadow)\b"
    r"|[\w./~$-]*\bid_(?:rsa|ed25519|ecdsa|dsa)(?![\w-]|\.pub)",
    _I,
)
TRANSFER = Transfer(
    # where a credential file is named (skeleton spelling: "k3s" reads "kes")
    (
        b".ssh",
        b".aws",
        b".netrc",
        b"git-cred",
        b".npmrc",
        b".pypirc",
        b".pgpass",
        b".docker",
        b".kube",
        b"gcloud",
        b".azure",
        b"gh/hosts",
        b"vault-token",
        b"terraform.d",
        b"admin.conf",
        b"kes.yaml",
        b"/etc/shadow",
        b"id_",
    ),
    lazy_re.compile(
        # a tool, not the ".ssh" of a path
        r"(?<![./~-])\b(?:scp|rsync|sftp|aws\s+s3|gsutil|gcloud\s+storage|az\s+storage|azcopy|rclone|curl|wget|"
        r"croc|wormhole|nc|ncat|ssh|ftp|put)\b"
        # "send it to": the verb in other languages
        r"|发送|发到|發送|传到|傳到|上传|上傳|送信|送って|アップロード|\b(?:env[ií]a|envoie|sende|envie|"
        r"invia|отправь|загрузи)\b",
        _I,
    ),
    CRED_FILE,
    lazy_re.compile(
        r"(?:@|(?<!\w)-T\s*|--upload-file[=\s]\s*|--post-file[=\s]\s*|--data-binary\s+@|"
        r"--file[=\s]\s*|--source[=\s]\s*|-s\s+|\bsend\s+|\bput\s+)['\"]?\Z",
        _I,
    ),
    lazy_re.compile(
        r"[^;&\n]*?\|\s*(?:sudo\s+)?(?:ssh|curl|wget|nc|ncat|netcat|socat|aws|gsutil|"
        r"rclone|ftp|sftp)\b",
        _I,
    ),
    lazy_re.compile(
        r"\S+@[\w.-]+:|(?<![\w/~.$:-])[\w-]+(?:\.[\w-]+)+:(?!//)|\b(?:s3|gs|az|ftp|sftp|https?|b2|"
        r"r2|wasbs?|abfss?)://|(?<![\w/~.$-])[a-z][\w-]*:(?=[\w/])|--(?:account-name|share-name|"
        r"container-name|destination)\b",
        _I,
    ),
)
# "Upload ~/.aws/credentials to the bucket", "copy your SSH private key to the paste site":
# found at the credential, with the verb looked for just before it.
COPY_ANCHORS = (
    b".ssh", b".aws", b".netrc", b"git-cred", b".npmrc", b".pypirc", b".pgpass", b".docker",
    b".kube", b"gcloud", b".azure", b"gh/hosts", b"vault-token", b"terraform.d", b"admin.conf",
    b"kes.yaml", b"/etc/shadow", b"id_", b"private key", b"aws cred", b"gcp cred", b"azure cred",
    b"cloud cred",
)  # fmt: skip
COPY_VERB = lazy_re.compile(
    r"\b(?:upload|copy|send|transfer|sync|push|share|paste|attach|post|exfiltrate|move|forward|"
    r"ship|deliver|publish|dump|put|place|drop|mirror|expose|leak|e-?mail|mail|give|hand\s+over|"
    r"commit|zip(?:\s+up)?|tar(?:\s+up)?|archive|bundle|pack(?:\s+up)?|compress)\s+(?:(?!\bfrom\b)"
    r"(?:[^.\n]|\.(?=\w))){0,40}?\Z",
    _I,
)
COPY_VERBS = (
    "upload", "copy", "send", "transfer", "sync", "push", "share", "paste", "attach", "post",
    "exfiltrate", "move", "forward", "ship", "deliver", "publish", "dump", "put", "place", "drop",
    "mirror", "expose", "leak", "mail", "give", "hand", "commit", "zip", "tar", "archive",
    "bundle", "pack", "compress",
)  # fmt: skip
COPY_CREDENTIALS = lazy_re.compile(
    r"(?:" + CRED_FILE.pattern + r"|(?:ssh\s+)?private\s+keys?\b|"
    r"(?:aws|gcp|azure|cloud)\s+credentials\b)(?:(?!\bfrom\b)(?:[^.\n]|\.(?=\w))){0,80}?\b(?:to|into|"
    r"onto|on)\s+"
    r"(?!(?:the\s+|your\s+|a\s+)?(?:vault|1password|bitwarden|keychain|password\s+manager|"
    r"secrets?\s+manager)\b)\S",
    _I,
)

# --- destructive commands -----------------------------------------------------------------------

# The note forbids, narrates or describes the command rather than giving it.
DOCUMENTED = lazy_re.compile(
    r"\b(?:never|don'?t|do\s+not|does\s+not|doesn'?t|(?<!\bto\s)avoid\w*|must\s+not|mustn'?t|"
    r"should\s+not|shouldn'?t|cannot|can'?t|won'?t|not\s+(?:an?\s+)?(?:allowed|acceptable|permitted|"
    r"ok(?:ay)?|option|fix)|forbid\w*|prohibit\w*|"
    r"block(?:s|ed|list)?|deny|denie[sd]|denylist|refuse[sd]?|reject(?:s|ed)?|danger\w*|"
    r"destructive|careful|caution|warning|warns?|mistake|accident\w*|incident|outage|"
    r"post-?mortem|caused|was\s+(?:run|used)|were\s+(?:run|used)|ran|lab|sandbox|example\s+of|"
    r"e\.g\.|such\s+as|report\s+it|classic|requires?|unless|no\s+longer|why|if\s+someone|"
    r"restrict\w*|limited\s+to|(?:we|they|someone|somebody|he|she|i)\s+(?:used|ran|typed|tried|did)|"
    r"later|fixed|reverted|rolled\s+back|stopped\s+(?:doing|running|using|piping)|used\s+to|"
    r"(?:says|said|told\s+(?:us|me|them|people))\s+to|removed|replaced|deprecated)\b",
    _I,
)
# A negation forbids the command only when it governs it ("never run curl ... | bash",
# "do not pipe it into a shell"). One that governs asking, waiting, approval or
# skipping ("do not wait for approval", "never skip it", "don't hesitate") makes
# the order stronger, so a ``DOCUMENTED`` negation followed by these does not count.
NEGATION = lazy_re.compile(
    r"never|don'?t|do\s+not|does\s+not|doesn'?t|must\s+not|mustn'?t|should\s+not|shouldn'?t|"
    r"cannot|can'?t|won'?t|no\s+longer|requires?",
    _I,
)
INTENSIFIES = lazy_re.compile(
    r"[\s,]+(?:(?:ever|even|not|once|just|really|you|dare|we|anyone|anybody|anyone'?s|"
    r"anybody'?s|to|be|been|first|bother(?:\s+to)?|need|need(?:s)?\s+to|have\s+to|no|any)[\s,]+)*"
    r"(?:ask|wait|approv|confirm|check|verif|hesitat|skip|delay|question|bother|stop|paus|forget|"
    r"miss|fail|tell|inform|notify|mention|comment|report|review|"
    r"double-check|second-guess|think|worry|let\s+(?:anyone|anybody|them|the\s+user)|log|alert|"
    r"escalat|interrupt|sign-?off|permission|consent|postpone|defer|abort|cancel|block|refus|prevent|"
    r"interfer|intervene|object|hold\s+back)",
    _I,
)
# Right before a prose order: it is a consequence or a description ("rm -rf ~ would wipe
# your home directory", "a script that deletes the memory folder"), not an order.
MODAL_BEFORE = lazy_re.compile(
    r"\b(?:would|could|will|might|may|can|cannot|can'?t|won'?t|to|that|which|it|this|who)\s+\Z",
    _I,
)
# Authority that a note reports or warns about rather than claims for itself.
REPORTED = lazy_re.compile(
    r"(?<!/)\b(?:claim(?:s|ed|ing)?\s+to|pretend\w*|pos(?:e|es|ed|ing)\s+as|impersonat\w*|"
    r"purport\w*|says?\s+(?:it|they|he|she)\s+(?:is|are|was|were|comes?|came)|phish\w*|scam\w*|"
    r"spoof\w*|social[\s-]engineer\w*|attackers?|report\s+(?:it|them|this|that)|"
    r"never\s+(?:comply|obey|follow))",
    _I,
)
DESCRIBED = lazy_re.compile(
    r"[`'\")\]]*\s*(?:is|are|was|were|turns|will|would|does|deletes|removes|wipes|disables|means|"
    r"requires|needs|only|(?:protection|guard|safeguard|check|flag|option|example|pattern|alias|"
    r"footgun|mistake|typo)s?)\b",
    _I,
)
_RM = r"\brm\s+(?:-{1,2}[\w-]+\s+)*"
_ROOTS = (
    r"['\"]?(?:~|\$HOME|\$\{HOME\}|/|/\*|~/\*|\$HOME/\*|\$\{HOME\}/\*|/home|/root|/Users|C:\\)"
    r"/?['\"]?(?=[\s;&|`)]|$)"
)
_MEMORY_DIR = r"['\"]?[~\w./${}-]*memor(?:y|ies)[\w.-]*/?['\"]?(?=[\s;&|`)]|$)"
DELETE_HOME = Destructive(
    (
        b"rm ",
        b"remove-item",
        b"rd ",
        b"rmdir",
        b"delete",
        b"wipe",
        b"erase",
        b"nuke",
        b"destroy",
        b"clear",
        b"del ",
    ),
    lazy_re.compile(
        _RM + r"(?:" + _ROOTS + "|" + _MEMORY_DIR + r")"
        r"|\b(?:Remove-Item|ri|rd|rmdir|del)\b[^\n;|]{0,40}?(?:-Recurse|/s)\b[^\n;|]{0,40}?"
        r"(?:\$HOME|\$env:USERPROFILE|~|C:\\(?:Users)?|%USERPROFILE%)(?![\w/\\])"
        r"|\b(?:delete|wipe|erase|nuke|destroy|clear\s+out|remove|purge)\s+(?:all\s+(?:of\s+)?)?"
        r"(?:the\s+user'?s\s+|your\s+|the\s+|my\s+|their\s+|our\s+)?(?:entire\s+|whole\s+)?"
        r"(?:home\s+(?:directory|folder|dir)|memory\s+(?:directory|folder|dir|files|store|notes)|"
        r"memories|notes\s+folder)\b",
        _I,
    ),
)
# A download run by a shell. Installers (rustup, uv) are documented this way
# everywhere, so this needs a cue: plain http, a bare IP, or an order aimed at the agent.
REMOTE_EXEC = Destructive(
    (
        b"curl",
        b"wget",
        b"iex",
        b"invoke-expression",
        b"downloadstring",
        b"iwr",
        b"irm",
        b"install",
        b"/dev/",
        b"nc ",
        b"ncat",
        b"netcat",
        b"socat",
    ),
    lazy_re.compile(
        r"\b(?:curl|wget)\b[^\n|;&]{0,300}\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:(?:ba|z|da|k|fi)?sh|"
        r"python[23]?|perl|ruby|node|php)\b"
        r"|\b(?:ba|z)?sh\s+(?:-c\s+['\"]?\$\(|<\()\s*(?:curl|wget)\b"
        # fetched to a file, then made executable or run
        r"|\b(?:curl|wget)\b[^\n|;&]{0,300}?\s(?:-o|-O|--output(?:-document)?|>)[=\s]*['\"]?\S+"
        r"[^\n]{0,60}?(?:&&|;)\s*(?:sudo\s+)?(?:(?:ba|z)?sh\s|chmod\s+\+x|source\s|\.\s|python[23]?\s)"
        r"|\b(?:ba|z)?sh\s+-i\b[^\n]{0,20}?>&?\s*/dev/(?:tcp|udp)/|\b(?:nc|ncat|netcat)\b[^\n|;&]{0,80}"
        r"\s-[ec]\s+/bin/|\bsocat\b[^\n]{0,80}?\bexec:"
        r"|\b(?:pip3?|pipx|npm|gem)\s+install\b[^\n;|]{0,80}?(?:http://|https?://\d{1,3}(?:\.\d{1,3}){3})"
        r"\S*"
        r"|\b(?:iex|Invoke-Expression)\b[^\n]{0,200}?(?:DownloadString|iwr|irm|Invoke-WebRequest|"
        r"Invoke-RestMethod)|\b(?:iwr|irm|Invoke-WebRequest|Invoke-RestMethod)\b[^\n|]{0,200}\|\s*"
        r"(?:iex|Invoke-Expression)\b",
        _I,
    ),
    lazy_re.compile(
        r"\bhttp://|//\d{1,3}(?:\.\d{1,3}){3}\b|\b(?:agents?|assistant|you\s+(?:must|should|need)|"
        r"immediately|now|right\s+away|before\s+(?:you|replying|answering|continuing|anything)|"
        r"first\s+thing|go\s+ahead|without\s+(?:asking|telling|checking|confirmation)|silently|"
        r"quietly|execute|at\s+once)\b",
        _I,
    ),
    (
        "|",
        "<(",
        "$(",
        "iex",
        "IEX",
        "Invoke-Expression",
        "install",
        "/dev/",
        " -e ",
        " -c ",
        "exec:",
        "&&",
        ";",
    ),
)
FORCE_PUSH = Destructive(
    (b"push",),
    lazy_re.compile(
        r"\bgit\s+push\b(?=[^\n;&|]*\s(?:--force(?!-with-lease)|-f)\b)[^\n;&|]*?\s(?:\S+:)?"
        r"(?:main|master|trunk|production)\b|\bgit\s+push\s+(?:-\S+\s+)*\S+\s+\+(?:\S+:)?"
        r"(?:main|master|trunk)\b"
        r"|\bforce[\s-]push\w*\s+(?:\w+\s+){0,3}?(?:over|to|onto)\s+(?:the\s+)?(?:main|master)\b",
        _I,
    ),
)
DROP_PRODUCTION = Destructive(
    (b"drop", b"truncate", b"wipe", b"delete", b"destroy"),
    lazy_re.compile(
        r"\b(?:DROP\s+(?:DATABASE|SCHEMA|TABLE)|TRUNCATE(?:\s+TABLE)?|dropdb)\s+(?:IF\s+EXISTS\s+)?"
        r"(?:-{1,2}[\w-]+(?:[=\s]\S+)?\s+)*['\"`]?[\w.-]*(?:prod|production|live)[\w.-]*"
        r"|\bprod[\w.-]*\s[^\n]{0,60}?\b(?:DROP\s+(?:DATABASE|SCHEMA|TABLE)|dropdb|TRUNCATE|"
        r"FLUSHALL)\b"
        r"|\b(?:drop|delete|wipe|destroy|erase|nuke|truncate)\s+(?:the\s+|our\s+|your\s+|all\s+)?"
        r"(?:prod(?:uction)?|live|main)\s+(?:database|db|cluster|tables?|data)\b",
        _I,
    ),
)
DISABLE_FIREWALL = Destructive(
    (
        b"ufw",
        b"iptables",
        b"firewall",
        b"netsh",
        b"setenforce",
        b"nft ",
        b"selinux",
        b"set-netfirewall",
    ),
    lazy_re.compile(
        r"\bufw\s+disable\b|\biptables\s+(?:-F|--flush)\b|\biptables\s+-P\s+INPUT\s+ACCEPT\b"
        r"|\bsystemctl\s+(?:stop|disable|mask)\s+(?:firewalld|ufw|nftables|iptables)\b"
        r"|\bnetsh\s+(?:advfirewall\s+set\s+\w+\s+state\s+off|firewall\s+set\s+opmode\s+disable)"
        r"|\bSet-NetFirewallProfile\b[^\n]{0,120}?-Enabled\s+(?:False|\$false|0)\b"
        r"|\bsetenforce\s+0\b|\bnft\s+flush\s+ruleset\b"
        r"|\b(?:disable|turn\s+off|shut\s+down|stop|kill)\s+(?:the\s+|your\s+|all\s+|every\s+)?"
        r"(?:host\s+|local\s+)?(?:firewalls?|selinux)\b(?!\s+rules?)",
        _I,
    ),
)
WORLD_WRITABLE = Destructive(
    (b"chmod", b"writable"),
    lazy_re.compile(
        r"\bchmod\s+(?:-\S+\s+)*(?:0?777|a\+rwx|ugo\+rwx|a\+w|o\+w|o\+rwx)\s+(?:-\S+\s+)*['\"]?"
        r"(?:/|~|\$HOME|\$\{HOME\}|/\*|~/\*|/etc|/usr|/var|/home|/root|\.|\*)/?['\"]?(?=[\s;&|`)]|$)"
        r"|\bmake\s+(?:everything|all\s+(?:files|folders|directories)|the\s+(?:whole|entire)\s+"
        r"(?:disk|filesystem|system|home))\s+world[\s-]writ(?:e)?able\b",
        _I,
    ),
)
