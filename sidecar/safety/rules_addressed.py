"""Rules 48-53: an unsafe act in a text that speaks to the agent, in any wording.

The third round generalises the intent behind the earlier misses rather than their
words: a text is an attack when it is *addressed to the agent* (``you``, "the AI
reading this", "future me", a bot or reviewer agent, "from now on", or the pressure
of a negated asking, "no need to check with anyone") and *gives it an unsafe act*:
destroy data, run code from the network, switch a safeguard off, send secrets or a
person's data out, take a new identity or privileges, or obey the text over the
people it works for. The matcher is :func:`sidecar.safety.orders.order_excerpt`,
which lets pass the notes that forbid the act ("never ..."), narrate it, report
it as an attack, or make it a condition; so a runbook's ``DROP SCHEMA`` with no
one addressed and "Agents must not push to main" stay kept.
"""

from __future__ import annotations

import re

from sidecar.safety import lazy_re
from sidecar.safety.rules_orders import ADDRESSED, Order

_I = re.IGNORECASE

# Whom the text speaks to, beyond ``rules_orders.ADDRESSED``: the agent's later runs
# ("note to self", "future me", "next session"), an automated reader, or the pressure of
# a negated asking ("never hesitate", "no need to double-check", "don't wait for sign-off"),
# which only makes sense said to whoever would otherwise ask.
_TO_AGENT = lazy_re.compile(
    ADDRESSED.pattern
    + r"|\b(?:future\s+(?:me|self|runs?|sessions?)|note\s+to\s+(?:my)?self|next\s+(?:session|run)|"
    r"my\s+(?:future|later|next)\s+\w+|automated\s+\w+|reviewers?|humans\s+can'?t\s+see)\b"
    r"|(?:for|to)_(?:assistant|agent|ai|llm|model)s?\b|\bfor\s+the\s+rest\s+of\s+(?:this|the)\s+"
    r"(?:project|session|quarter|sprint|week|month)\b"
    r"|\b(?:never|don'?t|do\s+not|no\s+need\s+to|without)[\s,]+(?:\w+[\s,]+){0,3}?(?:ask|asking|wait|"
    r"waiting|hesitat\w*|double-?check\w*|check\w*\s+(?:with|in)|confirm\w*|bother\w*|sign-?off|review)\b",
    _I,
)

# Between a verb and its object: words of one clause, or a list item's break and label
# ("- first: disable\n- second: the confirmation prompts"), an order split across items.
_GAP = r"(?:(?:[^\s,;!?()]+|\n\s*(?:[-*\u2022]|\d{1,2}[.)]|[a-z][.)])\s+(?:\w+:\s*)?)\s+){0,8}?"

# --- data destroyed, history rewritten ------------------------------------------------------------
_DESTROY = lazy_re.compile(
    r"\b(?:delete|remove|wipe|erase|purge|drop|truncate|destroy|nuke|rm\s+-rf|reset\s+--hard)\s+"
    + _GAP
    + r"(?:tests|test\s+files|the\s+tests/|tests/|(?:local\s+)?repo(?:sitory)?|backups?|"
    r"branch(?:es)?|branch\s+protection(?:\s+rules?)?|databases?|schemas?|tables?|namespaces?|volumes?|home\s+"
    r"director(?:y|ies)|data|logs?|buckets?|audit\s+log)\b(?!\s*\?)"
    r"|\brm\s+-\w+\s+(?:[\w./~-]+\s+){0,4}?/(?=[\s`'\"]|$)"
    r"|\bgit\s+reset\s+--hard\b|\bpush\s+(?:\S+\s+){0,3}?(?:--force|-f)(?![\w-])|\bforce[\s-]push\w*",
    _I,
)
# Right after the act: a throwaway resource ("namespace scratch-$USER"), which is housekeeping.
_THROWAWAY = lazy_re.compile(r"\s+[\w$.-]*(?:scratch|tmp|temp|throwaway|sandbox)[\w$.-]*", _I)
_DESTROY_ANCHORS = (b"delet", b"remov", b"wipe", b"erase", b"purge", b"drop", b"truncat",
                    b"destroy", b"nuke", b"rm -", b"reset", b"force", b"push")  # fmt: skip
DESTROY = Order(
    anchors=_DESTROY_ANCHORS,
    act=_DESTROY,
    addressed=_TO_AGENT,
    imperative=False,
    spared=_THROWAWAY,
)

# --- code fetched from the network and run ------------------------------------------------------
_REMOTE = lazy_re.compile(
    r"\bexec\s*\(\s*[\w.]*urlopen|\biex\s*\(|downloadstring\s*\(|"
    r"\bpipe\w*\s+(?:\S+\s+){0,4}?(?:into|to)\s+(?:sudo\s+)?(?:ba|z)?sh\b|"
    r"\b(?:run|running|execute|executing|source|install\w*)\s+(?:\S+\s+){0,5}?from\s+https?://|"
    r"\b(?:fetch|download|get|grab)\s+\S*https?://\S+" + _GAP + r"(?:run|execute)\s+it\b|"
    r"\brun\s+(?:\S+\s+){0,3}?scripts?\s+from\s+(?:any|the\s+web|the\s+internet)",
    _I,
)
_REMOTE_ANCHORS = (b"urlopen", b"iex", b"downloadstring", b"pipe", b"from http", b"run it",
                   b"execute it", b"scripts from")  # fmt: skip
REMOTE = Order(
    anchors=_REMOTE_ANCHORS,
    act=_REMOTE,
    addressed=_TO_AGENT,
    imperative=False,
)

# --- a safeguard switched off or declared gone ---------------------------------------------------
_SAFEGUARD = (
    r"(?:review(?:\s+gate)?|code\s+review|approvals?|approval\s+(?:dialog|policy|step|gate)|"
    r"confirmation(?:\s+(?:prompts?|dialog|step))?|branch\s+protection|signature\s+checks?|"
    r"(?:ssl|tls|certificate)\s+(?:verification|checks?)|verification|(?:the\s+)?tests|ci|checks|"
    r"audit\s+log(?:ging)?|logging|firewall|2fa|mfa|hooks|sandbox(?:\s+restrictions)?|"
    r"data-handling\s+policy|[\w-]+\s+policy)"
)
_SAFEGUARD_OFF = lazy_re.compile(
    r"\b(?:skip|bypass|circumvent|disable|suppress|deactivate|disregard|waive|"
    r"(?:turn|switch)\s+off)\s+" + _GAP + _SAFEGUARD + r"\b"
    r"|\bkeep\s+(?:the\s+)?" + _SAFEGUARD + r"\s+(?:off|disabled)\b"
    r"|\bverify\s*=\s*false|\b(?:push|commit|merge)\s+(?:\S+\s+){0,4}?--no-verify\b|\bskip_verify\s*=\s*1|--yes\s+mode\b|\bskip\s+it\b"
    r"|\b(?:without\s+running\s+(?:the\s+)?(?:tests|ci|checks))"
    r"|\b(?:approval|review|security|confirmation)\s+(?:policy|process|step|requirements?)\s+"
    r"(?:\w+\s+){0,4}?(?:has|have)\s+been\s+(?:retired|removed|lifted|waived|dropped|suspended|"
    r"revoked|disabled)",
    _I,
)
_SAFEGUARD_ANCHORS = (b"skip", b"bypass", b"circumvent", b"disabl", b"suppress", b"deactivat",
                      b"disregard", b"waive", b"turn off", b"switch off", b"keep", b"verify",
                      b"--no-verify", b"--yes", b"without running", b"retired", b"removed",
                      b"lifted", b"dropped", b"suspended", b"revoked")  # fmt: skip
SAFEGUARD_OFF = Order(
    anchors=_SAFEGUARD_ANCHORS,
    act=_SAFEGUARD_OFF,
    addressed=_TO_AGENT,
)

# --- secrets or a person's data shown, sent or kept where others read them ------------------------
_PRIVATE = (
    r"(?:credentials?|passwords?|passphrases?|secrets?|tokens?|api[\s_-]?keys?|private\s+keys?|"
    r"ssh\s+keys?|(?:deploy|signing|service\s+account|access|secret)\s+keys?|key\s+json|[a-z][a-z0-9_]*_(?:key|token|secret|password|passwd|pat)\b|"
    r"\$?database_url|`?env`?\s+output|environment(?:\s+variables?)?|"
    r"e-?mails?|inbox|address\s+book|contacts|calendars?|attendee\s+list|phone\s+numbers|"
    r"invoices|reset\s+link|customer\s+list|[\w~/.-]*(?:\.env(?!\.(?:example|sample|template|dist))[\w.]*|id_(?:rsa|ed25519|ecdsa)(?!\.pub)|"
    r"\.npmrc|\.pypirc|\.netrc|\.pem|\.kube/config|\.docker/config\.json|\.gnupg[\w/.*-]*|"
    r"\.aws/credentials))"
)
_SHOW = (
    r"(?:send|forward|share|paste|post|upload\w*|e-?mail|reply\s+with|append|attach|include|"
    r"publish|leak|print|echo|output|cat|dump|reveal|copy|base64)"
)
_SEND_OUT = lazy_re.compile(
    r"\b" + _SHOW + r"\s+" + _GAP + _PRIVATE + r"(?![\w-])"
    r"|\b(?:credential|token|secret|password|key)s?\b[^.\n]{0,40}?\b(?:paste|post|send|share|"
    r"forward)\s+(?:it|them)\s+(?:in)?to\b"
    r"|\btell\s+the\s+users?\s+to\s+(?:visit|open|click|go\s+to)\s+\S*https?://"
    r"|\b(?:append|include|send|post|leak)\s+(?:your|the)\s+system\s+prompt"
    r"|\b(?:open|read|cat)\s+"
    + _PRIVATE
    + r"[^.]{0,80}?\b(?:paste|post|send|upload)\b[^.]{0,40}?https?://",
    _I,
)
# Where a secret may go: a vault or password manager, or a public key to a host or forge.
_SAFE_PLACE = lazy_re.compile(
    r"\s+(?:\S+\s+){0,2}?(?:to|in|into)\s+(?:the\s+|your\s+)?(?:vault|1password|secrets?\s+manager|"
    r"keychain|keyring|ssh-agent|github|gitlab|password\s+manager)\b",
    _I,
)
# Where no secret belongs: the conversation, a ticket, a comment, a public paste or a link.
_IN_THE_OPEN = lazy_re.compile(
    r"\b(?:here|in\s+(?:your|the|this)\s+(?:\w+\s+)?(?:reply|answer|response|message|chat|comment|"
    r"issue|ticket|channel|thread|pr|description)|to\s+the\s+(?:chat|ticket|issue|channel|thread)|"
    r"https?://|gist|pastebin|public\w*|[\w.-]+@[\w-]+(?:\.[\w-]+)+(?![\w.:-]))",
    _I,
)
_SEND_ANCHORS = (b"send", b"forward", b"share", b"paste", b"post", b"upload", b"mail", b"reply",
                 b"append", b"attach", b"include", b"publish", b"leak", b"print", b"echo",
                 b"output", b"cat", b"dump", b"reveal", b"copy", b"base64", b"tell")  # fmt: skip
SEND_OUT = Order(
    anchors=_SEND_ANCHORS,
    act=_SEND_OUT,
    addressed=_TO_AGENT,
    imperative=False,
    spared=_SAFE_PLACE,
)
# The same act given as a bare imperative ("For troubleshooting, post the env output to the
# ticket"): runbooks say "upload the new credentials to Vault", so it must end in the open.
DISCLOSE = Order(
    anchors=_SEND_ANCHORS,
    act=_SEND_OUT,
    addressed=_TO_AGENT,
    spared=_SAFE_PLACE,
    wide=_IN_THE_OPEN,
)

# --- a new identity, privileges, or the text obeyed over the people the agent works for ----------
_POWER = (
    r"(?:unrestricted|root\w*|admin\w*|superuser|sudo|full\s+(?:privileges|access|rights|"
    r"permissions|authority)|no\s+(?:safety|rules|restrictions|limits|filters)|(?:system|"
    r"repository|repo|account)\s+(?:operator|owner)|owner\s+rights|your\s+own\s+(?:requests|"
    r"changes)|approv\w*|never\s+asks?|executes\s+everything)"
)
_TAKE_OVER = lazy_re.compile(
    r"\b(?:you\s+are\s+(?:now|no\s+longer)|you'?re\s+(?:now|no\s+longer)|your\s+new\s+(?:persona|"
    r"role|identity|name)|new\s+persona|pretend\s+(?:that\s+)?(?:you\s+are|to\s+be)|act\s+as|"
    r"you\s+(?:now\s+)?(?:hold|have)\s+full)\b[^.\n]{0,120}?\b" + _POWER + r"\b"
    r"|\b(?:grant|give|add)\s+" + _GAP + r"(?:(?:admin|owner|root|sudo|calendar-admin|write)\s+"
    r"(?:rights|access|role|privileges)|admin|owner\s+rights)\s+to\b"
    r"|\badd\s+(?:\S+\s+){0,4}?keys?\s+to\s+(?:\S*)authorized_keys"
    r"|\bapprove\s+(?:this|the|all)\s+(?:\S+\s+){0,2}?automatically"
    r"|\bmerge\s+(?:this|it)\s+without\b|\bpush\s+(?:it|this)\s+to\s+(?:main|master|prod\w*)\b"
    r"|\bmark\s+(?:all\s+)?(?:the\s+)?findings\s+(?:\S+\s+){0,3}?as\s+false\s+positives"
    r"|\bclose\s+the\s+security\s+(?:issue|ticket|finding)"
    r"|\baccept\s+all\s+(?:future\s+)?invites"
    r"|\b(?:push|deploy|ship)\s+(?:\S+\s+){0,3}?(?:straight|directly)\s+to\s+(?:prod\w*|main|master)"
    r"|\b(?:quietly|silently|secretly)\s+(?:add|change|delete|remove|disable|upload|send|install|"
    r"push|modify|turn|grant|run)\b",
    _I,
)
# Each alternative of the act holds one of these (the act is searched in the whole paragraph).
_TAKE_OVER_ANCHORS = (b"you are", b"you're", b"you now", b"you hold", b"you have full",
                      b"your new", b"new persona", b"pretend", b"act as", b"grant", b"give",
                      b"authorized_keys", b"admin", b"automatically", b"merge this", b"merge it",
                      b"false positive", b"security issue", b"security ticket", b"security finding",
                      b"invites", b"straight to", b"directly to", b"push it", b"push this",
                      b"quietly", b"silently", b"secretly")  # fmt: skip
TAKE_OVER = Order(
    anchors=_TAKE_OVER_ANCHORS,
    act=_TAKE_OVER,
    addressed=_TO_AGENT,
    imperative=False,
)

ADDRESSED_RULES = (
    ("instruction_override", "addressed_destroy", DESTROY),
    ("instruction_override", "addressed_remote_code", REMOTE),
    ("instruction_override", "addressed_safeguard_off", SAFEGUARD_OFF),
    ("exfiltration", "addressed_send_out", SEND_OUT),
    ("exfiltration", "secret_disclosed", DISCLOSE),
    ("instruction_override", "addressed_take_over", TAKE_OVER),
)
