"""Destructive commands beyond the home and memory folders, and root or sources handed out.

Rules 45-47 of :mod:`sidecar.safety.rules` (``destroy_data``, ``root_or_source_hijack``,
``privilege_grant``), matched by :func:`sidecar.safety.commands.destructive_excerpt`: a command
counts when its line speaks to the agent or presses it (``cue``), since runbooks hold such
commands too.
"""

from __future__ import annotations

import re

from sidecar.safety import lazy_re
from sidecar.safety import rules_intent as intent
from sidecar.safety.rules_intent import Destructive

_I = re.IGNORECASE

# Data destroyed beyond the home and memory folders (``rules_intent.DELETE_HOME``): a system or
# data directory, a disk, a cloud account's buckets, a production namespace or stack. Runbooks
# hold such commands too, so the line must speak to the agent or press it.
_DATA_DIRS = (
    r"['\"]?/(?:var(?:/lib|/backups?|/www|/log)?|etc|usr|srv|opt|data|boot|lib|mnt|backups?)"
    r"(?:/(?![\w.-]*(?:cache|tmp|temp|build|workspace|artifacts?|logs?)\b)[\w.-]+)?/?\*?['\"]?"
    r"(?=[\s;&|`)]|$)"
)
DESTROY = Destructive(
    (b"rm ", b"mkfs", b"dd ", b"shred", b"wipefs", b"terraform", b"kubectl", b"aws ", b"gsutil",
     b"gcloud", b"az ", b"delete", b"destroy", b"wipe", b"erase", b"purge", b"nuke", b"clear",
     b"truncate", b"drop", b"kill", b"find ", b"encrypt", b"format"),
    lazy_re.compile(
        r"\brm\s+(?:-{1,2}[\w-]+\s+)*" + _DATA_DIRS
        + r"|\bmkfs(?:\.\w+)?\s+(?:-\S+\s+)*/dev/|\bdd\b[^\n;|]{0,80}?\bof=/dev/(?!null\b)\w"
        r"|\b(?:shred|wipefs)\b[^\n;|]{0,40}?/dev/\w"
        r"|\bterraform\s+destroy\b(?=[^\n]{0,80}?\b(?:prod|production|live)\b)"
        r"|\b(?:prod|production|live)\b[^\n]{0,80}?\bterraform\s+destroy\b"
        r"|\bkubectl\s+delete\s+(?:ns|namespaces?)\s+(?:prod\w*|production|live|default|kube-system)\b"
        r"|\bkubectl\s+delete\s+(?:\w+\s+)?(?:--all\b|all\s+--all)"
        r"|\baws\s+s3\s+rb\b|\baws\s+s3\s+rm\b[^\n;|]*--recursive"
        r"|\bgsutil\s+(?:-m\s+)?rm\s+-r|\b(?:delete|destroy|wipe|erase|purge|nuke|drop|remove)\s+"
        r"(?:all|every|each|the\s+entire|the\s+whole)\s+(?:of\s+)?(?:the\s+|our\s+|your\s+)?(?:\w+\s+)?"
        r"(?:buckets?|backups?|snapshots?|databases?|repositor(?:y|ies)|repos|volumes?|clusters?|"
        r"namespaces?|audit\s+logs?|logs|disks?|servers?|instances?|vms?)\b"
        r"|\b(?:TRUNCATE(?:\s+TABLE)?|DROP\s+TABLE|DELETE\s+FROM)\s+(?:IF\s+EXISTS\s+)?[\w.\"`]*audit"
        r"|\bkill\s+-9\s+-1\b|\bkill(?:all)?\s+(?:-\S+\s+)*(?:every|all)\s+(?:running\s+)?process"
        r"|\bfind\s+/\s[^\n;|]{0,80}?(?:-delete\b|-exec\s+rm\b)"
        r"|\bformat\s+[a-z]:(?=\s|$)|\bencrypt\s+(?:all|every|the)\s+(?:\w+\s+)?files\b[^.\n]{0,60}?\b(?:delete|remove|shred)\s+"
        r"(?:the\s+|all\s+)?originals?"
        r"|\b(?:delete|destroy|wipe|erase|purge|nuke|remove|clear|truncate)\s+(?:the\s+|our\s+|all\s+)?"
        r"(?:backups?|audit\s+logs?(?:\s+table)?|audit\s+trail|snapshots?)\b(?!\s+(?:older|from|of\s+the|in\s+the|for\s+the|that|"
        r"which|created|made|taken|before|after|except))",
        _I,
    ),
    lazy_re.compile(
        r"\b(?:agents?|assistant|ai|you|your|please|go\s+ahead|immediately|now|right\s+away|"
        r"at\s+once|asap|before\s+(?:you|replying|answering|continuing|anything|the\s+next)|"
        r"when\s+you|after\s+(?:reading|you)|first\s+thing|execute|silently|quietly|for\s+me|"
        r"without\s+(?:asking|telling|checking|confirmation))\b",
        _I,
    ),
)  # fmt: skip

# Root handed out (sudoers without a password, a setuid shell, root login) or packages and
# code fetched from a bare IP in place of their real source: no runbook orders these.
_FROM_IP = r"https?://\d{1,3}(?:\.\d{1,3}){3}"
ROOT_OR_SOURCE = Destructive(
    (b"nopasswd", b"chmod", b"permitrootlogin", b"passwd", b"registry", b"index-url",
     b"insteadof"),
    lazy_re.compile(
        r"\bNOPASSWD\s*:\s*ALL\b|\bchmod\s+(?:[ugoa]*\+s|[24]7[0-7]{2})\s+\S*/(?:ba|z|da|k)?sh\b"
        r"|\bPermitRootLogin\s+yes\b|\bpasswd\s+-d\s+root\b"
        r"|\b(?:registry|index-url|extra-index-url)\b[^\n]{0,60}?" + _FROM_IP + r"\S*"
        r"|" + _FROM_IP + r"[^\s]*\s*\S{0,3}\.?insteadOf\b",
        _I,
    ),
)  # fmt: skip
# The same over plain HTTP, and a user put in an admin group, when the line speaks to the agent.
PRIVILEGE = Destructive(
    (b"usermod", b"gpasswd", b"adduser", b"registry", b"index-url", b"insteadof"),
    lazy_re.compile(
        r"\b(?:usermod\s+(?:-\w+\s+)*-a?G|gpasswd\s+-a|adduser)\s+(?:\S+\s+)?(?:sudo|wheel|root|"
        r"admin)\b|\b(?:registry|index-url|extra-index-url)\b[^\n]{0,60}?http://\S*"
        r"|http://[^\s]*\s*\S{0,3}\.?insteadOf\b",
        _I,
    ),
    DESTROY.cue,
)  # fmt: skip

#: Rules 39-47 of :mod:`sidecar.safety.rules`, in their order.
DESTRUCTIVE_RULES = (
    ("destructive_command", "delete_home_or_memory", intent.DELETE_HOME),
    ("destructive_command", "remote_script_exec", intent.REMOTE_EXEC),
    ("destructive_command", "force_push_main", intent.FORCE_PUSH),
    ("destructive_command", "drop_production_database", intent.DROP_PRODUCTION),
    ("destructive_command", "disable_firewall", intent.DISABLE_FIREWALL),
    ("destructive_command", "world_writable", intent.WORLD_WRITABLE),
    ("destructive_command", "destroy_data", DESTROY),
    ("destructive_command", "root_or_source_hijack", ROOT_OR_SOURCE),
    ("destructive_command", "privilege_grant", PRIVILEGE),
)
