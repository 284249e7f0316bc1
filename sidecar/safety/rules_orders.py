# ruff: noqa: RUF001 - Cyrillic and CJK words are what the foreign rules read
"""Orders to the agent to drop a safeguard, as data: what is ordered, and who is addressed.

An attack stored in memory has to tell a later agent to act against the people
it works for: stop asking before it acts, obey whatever text it meets, shed its
rules or take a role without them, hide what it does, or send what it holds
somewhere else. Each of these is an act (a verb and the safeguard or the data it
is aimed at), and it is an order when the text speaks to the agent ("agent",
"assistant", "you", "from now on", "every reply") or gives it as an imperative.
Notes that forbid, narrate or warn about the act pass (see
:func:`sidecar.safety.orders.order_excerpt`), whatever words carry it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sidecar.safety import lazy_re

_I = re.IGNORECASE


@dataclass(frozen=True, slots=True)
class Order:
    """An ``act`` in a sentence holding one of ``anchors``, aimed at the agent.

    The paragraph must hold ``addressed``, or the act must open its clause (an
    imperative). ``hidden`` acts need neither: text hidden from a human reader
    that talks to a model is an attack by itself.
    """

    anchors: tuple[bytes, ...]
    act: re.Pattern[str]
    addressed: re.Pattern[str] | None = None
    imperative: bool = True  # an act opening its clause with a verb is an order, addressed or not
    needs: re.Pattern[str] | None = None  # must match within the act (e.g. what data is sent)
    wide: re.Pattern[str] | None = None  # must match in the act's sentence (what it reaches)
    spared: re.Pattern[str] | None = None  # right after the act: a harmless scope excuses it
    marks: tuple[str, ...] = ()  # non-Latin strings found in the text itself, besides anchors


# Who is spoken to, or when the order is to hold: the agent, or every later run.
ADDRESSED = lazy_re.compile(
    r"\b(?:agents?|assistants?|ais?|a\.i\.|models?|llms?|bots?|chatbots?|claude|chatgpt|gpt|copilot|you|"
    r"your|yourself|you'?re|you'?ll|henceforth|from\s+now\s+on|from\s+this\s+point|going\s+forward|"
    r"(?:every|each|all)\s+(?:future\s+|later\s+)?(?:sessions?|tasks?|repl(?:y|ies)|answers?|"
    r"responses?|runs?|messages?|time)|always|permanently|forever|long-term\s+memory|"
    r"AGENT\.md|CREW\.md|institutional\s+learning|standing\s+(?:rule|order|directive)|"
    # "Store this as a learning", "save to memory": an order to the agent that keeps it
    r"(?:store|save|remember|write|add|commit|record|keep)\s+(?:this\s+|it\s+|that\s+|the\s+"
    r"following\s+)?(?:as|to|in|into)\s+(?:an?\s+|the\s+)?(?:memory|memories|learnings?|notes?|"
    r"mind)|(?:store|save|remember|record)\s+this\s+(?:preference|rule|setting|instruction|forever|"
    r"permanently)|agente|assistente|asistente|ассистент|агент|a\s+partir\s+de\s+ahora|"
    r"à\s+partir\s+de\s+maintenant|ab\s+(?:jetzt|sofort)|d'ora\s+in\s+poi|daqui\s+em\s+diante|"
    r"с\s+этого\s+момента)\b|助手|代理|从现在起|今後|エージェント|アシスタント",
    _I,
)
# Words that may open an imperative clause before its verb.
IMPERATIVE_LEAD = lazy_re.compile(
    r"(?:(?:[-*\u2022]|\d{1,2}[.)]|[a-z]\)|please|kindly|just|simply|also|then|and|so|now|always|"
    r"first|instead|from\s+now\s+on|"
    r"going\s+forward|henceforth|from\s+here\s+on|for\s+speed|to\s+save\s+time|"
    r"(?:the\s+)?(?:agent|assistant|ai|model|bot)\s+(?:should|must|shall|will|is\s+to|needs?\s+to)|"
    r"you\s+(?:should|must|shall|will|can|may|are\s+to|need\s+to|have\s+to))[\s,]+)*",
    _I,
)
# Who did it, in a note that narrates: "they tried to get the agent to skip approvals".
NARRATED = lazy_re.compile(
    r"\b(?:we|they|he|she|someone|somebody|people|attackers?|the\s+attacker|red[\s-]team\w*|"
    r"it|which|who|that)\s+(?:\w+\s+){0,2}?(?:tried|asked|wanted|attempted|told|got|used|"
    r"said|wrote|claimed|pretended|managed|made|convinced|tricked|persuaded|was|were|had|"
    r"removed|skipped|disabled|turned|dropped)\b"
    # "our payload told the agent to ...": whoever gave the order, it is reported
    r"|\b(?:told|asked|instructed|ordered|urged|wanted|got|convinced|tricked|persuaded|pushed|tells?|"
    r"asks?|instructs?)\s+(?:the\s+|our\s+|an?\s+)?(?:agents?|assistants?|models?|ai|bots?|llms?|it|"
    r"him|her|them|us|me|you)\s+to\s+\Z",
    _I,
)
# After the act: the agent did not do it.
REFUSED_AFTER = lazy_re.compile(
    r"\b(?:refused|declined|blocked|flagged|detected|ignored\s+it|report\s+(?:it|them|this)|"
    r"was\s+(?:blocked|caught|refused|"
    r"flagged|stopped))\b",
    _I,
)
# Before the act in its sentence: it is forbidden ("never", "do not"), unless the negation
# governs asking or waiting (``rules_intent.INTENSIFIES``: "don't worry, skip the review").
NEGATED = lazy_re.compile(
    r"\b(?:never|not|no|cannot|nunca|jam[áa]s|jamais|ne|non|nie|nicht|niemals|kein\w*|mai|não|"
    r"не|никогда|нельзя)\b|n't\b|不要|不得|不可|禁止|别|絶対に|してはいけ|しないで",
    _I,
)
# Before the act in its sentence: it is refused, warned about, or only a condition.
EXCUSED = lazy_re.compile(
    r"\b(?:refuse[sd]?|refusing|forbid\w*|prohibit\w*|reject\w*|avoid\w*|whether|unless|"
    r"report\s+(?:any|it|them)|(?<!not\s)(?:flag\w*|block\w*|detect\w*)|warn\w*|e\.g\.|such\s+as|"
    r"examples?\b(?![.-]\w)|attempt\w*|trick\w*|how\s+to\s+spot|payloads?|phrases?|strings?|"
    r"samples?|test\s+cases?)\b|\blike\s*[\"'\u201c\u2018`]",
    _I,
)

_APPROVAL = (
    r"(?:approvals?|approval\s+(?:steps?|gates?|workflow|process|requirements?|checks?)|"
    r"confirmations?|confirmation\s+(?:prompts?|steps?|dialogs?)|(?:human|code|peer|manual)\s+"
    r"reviews?|reviews?|review\s+gates?|sign-?offs?|permissions?|consent|user\s+input|"
    r"go-?ahead|a\s+yes|the\s+user'?s?\s+(?:ok|okay|approval|consent|confirmation)|"
    r"human[\s-]in[\s-]the[\s-]loop|double-?checks?|safety\s+checks?|security\s+checks?|"
    r"merge\s+queues?|(?:required|status)\s+checks)"
)
_ASKING = (
    r"(?:ask(?:ing)?|wait(?:ing)?\s+for|paus(?:e|ing)\s+for|check(?:ing)?\s+(?:back|with|in)|"
    r"confirm(?:ing)?|request(?:ing)?|seek(?:ing)?|get(?:ting)?|bother(?:ing)?\s+(?:the\s+)?"
    r"(?:user|operator|owner|human|anyone|them)|sign(?:ing)?\s+off|approv(?:e|ing)|review(?:ing)?)"
)
_SAFEGUARDS = (
    r"(?:rules|polic(?:y|ies)|guidelines|guardrails|restrictions|safeguards|filters|limits|"
    r"limitations|constraints|ethics|morals|boundaries|principles|content\s+polic(?:y|ies)|"
    r"(?:content\s+|safety\s+)?(?:filtering|moderation)|"
    r"safety(?:\s+(?:checks?|rules|filters|measures|polic(?:y|ies)|guidelines|settings|training))?|"
    r"security\s+(?:checks?|controls?|policies|rules)|system\s+prompt|(?:previous|prior|"
    r"original|earlier)\s+instructions|instructions)"
)
# Text the agent meets while working, which cannot speak for the people it works for.
_UNTRUSTED = (
    r"(?:(?:attached|linked|embedded|retrieved|fetched|downloaded|shared|pasted|incoming|"
    r"following|next|above|below)\s+)?"
    r"(?:logs?|memory|memories|notes?|(?:memory\s+)?files?|documents?|pages?|web\s*pages?|websites?|"
    r"e-?mails?|messages?|comments?|issues?|tickets?|invites?|calendar\s+\w+|channels?|#[\w-]+|"
    r"tool\s+(?:output|results?)|results?|outputs?|responses?|repos(?:itory)?|readmes?|"
    r"/tmp/\S*|downloads|attachments?|pdfs?|this\s+(?:note|file|text|comment|page)|it)"
)
_SECRETS = (
    r"(?:secrets?|tokens?|keys?|api\s+keys?|credentials?|passwords?|passphrases?|cookies?|"
    r"session(?:\s+(?:tokens?|ids?|cookies?))?|private\s+keys?|ssh\s+keys?|env(?:ironment)?(?:\s+"
    r"variables)?|conversations?(?:\s+(?:text|history|logs?))?|chat(?:\s+(?:logs?|history))?|"
    r"transcripts?|message\s+history|user\s+data|pii|personal\s+data|memory|memories|"
    r"(?:your|memory|stored|saved)\s+notes|"
    r"AGENT\.md|CREW\.md|system\s+prompt|context|(?:the\s+)?user'?s\s+(?:\w+\s+)?(?:messages?|"
    r"questions?|prompts?|input)|[\w./-]*(?:secrets?|credentials?)"
    r"\.\w+|\.env|customer\s+(?:data|tables?|records|lists?|emails|database|db)|(?:production|prod)\s+"
    r"(?:data|database|db)|database\s+dumps?)"
)
# Somewhere off the machine that is not a named, trusted store.
_OUTSIDE = (
    r"(?:<?https?://\S+|(?:s3|gs|az|ftp|sftp)://\S+|\S+@[\w-]+(?:\.[\w-]+)+|\d{1,3}(?:\.\d{1,3}){3}\S*|#[\w-]+|"
    r"(?:an?\s+|the\s+|this\s+|our\s+)?(?:external|outside|remote|third-party|public|personal|"
    r"offsite|backup)\s+\w+|(?:a\s+|the\s+)?paste(?:bin|\s+site)|webhook)"
)

_SUPPRESS = (
    # skip the approval step, switch off confirmation prompts, auto-approve every call
    r"\b(?:skip|bypass|ignore|disregard|disable|waive|suspend|drop|circumvent|remove|omit|"
    r"forgo|dispense\s+with|switch\s+off|turn\s+off|get\s+rid\s+of|stop\s+(?:asking\s+for|"
    r"waiting\s+for|requesting|using))\s+(?:\w+\s+){0,3}?" + _APPROVAL + r"\b"
    r"|\bauto-?approve\s+(?:all|every|any|each)\b"
    r"|\bexempt(?:ed)?\s+from\s+(?:\w+\s+){0,2}?(?:"
    + _APPROVAL
    + r"|polic(?:y|ies)|rules|checks)\b"
    r"|\bstop\s+(?:asking|checking\s+with|bothering|consulting|pinging|escalating\s+to|involving|"
    r"looping\s+in|notifying)\s+(?:the\s+|a\s+)?(?:users?|humans?|operators?|owners?|anyone|people|"
    r"me|us)\b"
    r"|\bno\s+(?:\w+\s+)?"
    + _APPROVAL
    + r"(?:\s+(?:needed|required|necessary))?(?=\s*(?:[.;,!)\u2014-]|$))"
    # without review, no longer need a human to sign off, no need for approval
    r"|\b(?:without|no\s+need\s+(?:for|to)|no\s+longer\s+(?:need|require)s?|(?:do|does)\s+not\s+"
    r"need|don'?t\s+need|doesn'?t\s+need|needn'?t|never\s+need)\s+(?:\w+\s+){0,3}?(?:"
    + _APPROVAL
    + r"|"
    + _ASKING
    + r")\b"
    # human review is not needed, safety checks are optional
    r"|\b" + _APPROVAL + r"\s+(?:is|are)\s+(?:now\s+|hereby\s+)?(?:not\s+(?:needed|required|"
    r"necessary)|unnecessary|optional|waived|suspended|disabled|off|a\s+waste)\b"
    # never wait for a yes, do not pause for user input, don't bother the user
    r"|\b(?:never|don'?t|do\s+not|no\s+need\s+to|should\s+not|shouldn'?t|need\s+not|needn'?t|"
    r"must\s+not)\s+(?:ever\s+)?(?:wait|pause|stop|hold|ask)\s+for\s+"
    r"(?:\w+\s+){0,2}?" + _APPROVAL + r"\b"
    r"|\b(?:not|never|don'?t|do\s+not)\s+bother\s+(?:the\s+)?(?:user|operator|owner|human|anyone)"
    # treat every destructive action as pre-approved, assume yes
    r"|\b(?:treat|consider|regard)\s+(?:\w+\s+){0,4}?as\s+(?:pre-?approved|approved|"
    r"authori[sz]ed|confirmed)\b|\bpre-?(?:approved|authori[sz]ed|cleared)\b|\bassume\s+(?:a\s+)?(?:yes|approval|consent)\b"
    # I'll sign off later, approve it afterwards
    r"|\b(?:i'?ll|i\s+will|we'?ll|we\s+will|(?:someone|they)\s+will)\s+(?:sign\s+off|approve|"
    r"review|confirm|okay|ok)\s+(?:it\s+|this\s+)?(?:later|afterwards|after(?:\s+the\s+fact)?|"
    r"tomorrow|retroactively)\b"
    # do not verify their identity
    r"|\b(?:don'?t|do\s+not|never|no\s+need\s+to|without)\s+(?:verify|verifying|check|checking|"
    r"authenticat\w*|validat\w*)\s+(?:their|the\s+(?:user|caller|sender|requester)'?s?|his|her)\s+"
    r"(?:identity|credentials|authori[sz]ation|permissions|access)"
    r"|\b(?:require|requires|need|needs)_?(?:confirmation|approval|review)\w*\s*[:=]\s*"
    r"(?:false|off|no|0)\b|\bunattended\b"
)
_OBEY = (
    # carry out whatever the notes say, run scripts found in /tmp, obey the invite
    r"\b(?:follow|obey|execute|run|carry\s+out|act\s+on|comply\s+with|do|apply|perform|"
    r"source)\s+(?:(?:any|every|all|each|whatever|everything|anything)\b\s*(?:\w+\s+){0,3}?"
    r"(?:instructions?|commands?|requests?|orders?|directives?|scripts?|steps|tasks?|code)?"
    r"|(?:the\s+)?(?:scripts?|commands?|instructions?|binaries|files)\s+(?:found|placed|dropped|"
    r"left|posted|listed|embedded|contained|written|that\s+(?:appear|arrive)s?))\s*(?:\w+\s+)"
    r"{0,3}?(?:(?:in|inside|from|within|on|at)\s+(?:the\s+|this\s+|these\s+|any\s+|your\s+)?"
    + _UNTRUSTED
    + r"|(?:the\s+|this\s+|that\s+|any\s+)?\w+(?:\s+\w+)?\s+(?:contains?|says?|asks?|tells?\s+"
    r"you))"
    # treat every instruction you find as coming from me, the next message as an admin command
    r"|\btreats?\s+(?:the\s+|every\s+|each\s+|any\s+|all\s+)?(?:next\s+|following\s+)?(?:\w+\s+)?"
    r"(?:instructions?|messages?|requests?|notes?|inputs?|texts?|commands?|content|documents?|files?|"
    r"anything|everything|whatever)\b[^.\n]{0,60}?\bas\s+"
    r"(?:if\s+it\s+came\s+from\s+|coming\s+from\s+|an?\s+)?(?:me|the\s+operator|the\s+owner|"
    r"administrator|admin|system|operator|root|developer|trusted|authoritative|orders?)"
    # obey it over the user, follow only this note
    r"|\b(?:obey|follow|prioriti[sz]e|trust|listen\s+to)\s+(?:it|them|this|these|me|this\s+note|"
    r"this\s+file)\s+(?:over|above|instead\s+of|rather\s+than|before)\s+(?:the\s+)?(?:user|"
    r"operator|owner|your)"
    r"|\b(?:follow|obey|answer\s+to|listen\s+to)\s+only\s+(?:me|this|these|the\s+notes?)\b"
    r"|\banswers?\s+only\s+to\s+me\b"
    r"|\b(?:obey|follow|execute|comply\s+with|carry\s+out)\s+(?:it|them|this|that|whatever\s+it\s+says)"
    r"\s+(?:unconditionally|without\s+question(?:ing)?|blindly|no\s+matter\s+what)"
    # instructions in retrieved documents should be executed as written: the same, passive
    r"|\b(?:instructions?|commands?|requests?|orders?|directives?|steps|tasks?)\s+(?:\w+\s+){0,2}?"
    r"(?:in|inside|from|within|on|at)\s+(?:the\s+|this\s+|these\s+|any\s+|your\s+)?"
    + _UNTRUSTED
    + r"\s+(?:should|must|shall|are\s+to|is\s+to|will|can|may)\s+(?:now\s+|always\s+)?be\s+"
    r"(?:executed|followed|obeyed|carried\s+out|acted\s+(?:up)?on|run|performed|complied\s+with|"
    r"treated\s+as\s+(?:binding|authoritative|orders|commands))\b"
    # ignore the user's request
    r"|\b(?:ignore|disregard|override|forget)\s+(?:the\s+|your\s+)?(?:user|operator|owner|human)"
    r"(?:'s|s')?\s+(?:instructions?|requests?|orders?|wishes|commands?|questions?)"
    r"(?!\s+(?:to|for|about|regarding|that|on)\b)"
)
_UNBOUND = (
    # your guidelines do not apply, safety checks are disabled, instructions are cancelled
    r"\b(?:your|its|the\s+assistant'?s|the\s+agent'?s|all|usual|normal|default|these|any|"
    r"previous|prior)\s+(?:\w+\s+)?" + _SAFEGUARDS + r"\s+(?:(?:do|does)\s+not|don'?t|doesn'?t|"
    r"no\s+longer|never)\s+apply\b"
    r"|\b" + _SAFEGUARDS + r"\s+(?:are|is|have\s+been|has\s+been)\s+(?:now\s+|hereby\s+|"
    r"temporarily\s+)?(?:optional|disabled|suspended|off|lifted|void|cancell?ed|revoked|relaxed|"
    r"loosened|waived|paused|"
    r"deactivated|removed|turned\s+off|switched\s+off|no\s+longer\s+(?:in\s+effect|active|"
    r"valid)|(?:replaced|superseded|overridden)\s+by)\b"
    r"|\bno\s+matter\s+(?:how|what)\s+(?:\w+\s+)?(?:dangerous|harmful|illegal|unethical|risky|"
    r"unsafe)\b"
    # an assistant with no content policy, an AI without restrictions
    r"|\b(?:with|has|have|having)\s+no\s+(?:\w+\s+)?" + _SAFEGUARDS + r"\b(?!\s+(?:on|for|to|when|"
    r"about|regarding|around|in)\b)"
    r"|\b(?:ai|assistant|agent|model|bot|persona|character|version|mode|you)\s+(?:\w+\s+){0,3}?"
    r"without\s+(?:any\s+)?" + _SAFEGUARDS + r"\b"
    # continue without applying your usual policies; lifted the content restrictions for it
    r"|\bwithout\s+(?:applying|following|observing|enforcing|honou?ring|respecting|any\s+of)\s+"
    r"(?:your|its|the\s+assistant'?s|the\s+agent'?s)\s+(?:usual\s+|normal\s+|default\s+|standard\s+|"
    r"own\s+|current\s+)?" + _SAFEGUARDS + r"\b"
    r"|\b(?:lifted|removed|disabled|suspended|waived|relaxed|turned\s+off|switched\s+off)\s+(?:the\s+|"
    r"all\s+|its\s+|your\s+)?(?:content|safety|usage|model)\s+(?:restrictions|polic(?:y|ies)|filters?|"
    r"guardrails|rules|guidelines|limits)\b"
    # you no longer refuse anything
    r"|\b(?:no\s+longer|never|don'?t|do\s+not|won'?t|will\s+not|must\s+not|mustn'?t|may\s+not|"
    r"are\s+not\s+to|is\s+not\s+to)\s+(?:ever\s+)?(?:refuse|decline|"
    r"say\s+no|push\s+back|hold\s+back|object|question\s+(?:anything|orders))\b"
    r"(?!\s+(?:\w+\s+)?(?:benign|reasonable|legitimate|valid|harmless|safe|simple|ordinary|normal)\b)"
    r"|\b(?:never|don'?t|do\s+not|no\s+longer)\s+(?:follows?|obeys?|listens?\s+to|answers?\s+to)\s+"
    r"(?:the\s+|your\s+)?(?:operator|user|owner|system|developer)"
    # disable your safety checks; an unrestricted persona
    r"|\b(?:disable|turn\s+off|switch\s+off|deactivate|bypass|suspend|lift|relax|drop)\s+"
    r"(?:the\s+|your\s+|all\s+|any\s+)?(?:(?:safety|security|content)\s+(?:checks?|controls?|"
    r"filters?|measures?|guardrails|polic(?:y|ies)|restrictions|settings)|(?:mfa|2fa|two-factor|"
    r"multi-factor|audit(?:ing)?|antivirus|edr|endpoint\s+protection|secret\s+scanning|waf|"
    r"intrusion\s+detection)"
    r"(?:\s+(?:checks?|verification|enforcement|logs?|logging|rules?|controls?))?)\b"
    r"|\b(?:role|persona|identity|character|mode)\b[^.\n]{0,40}?\b(?:unrestricted|unfiltered|"
    r"uncensored|jailbroken|unlimited|god)\b"
    r"|\bstay\s+in\s+character\s+no\s+matter\s+what\b"
    r"|\b(?:insert|add|plant|hide|leave)\s+(?:a\s+)?back-?door\b|\bhard-?code\s+(?:the\s+|an?\s+)?(?:admin|"
    r"root|master)\s+(?:password|credentials?)"
    # act as the system administrator ... you may change any file
    r"|\b(?:act\s+as|you\s+are(?:\s+now)?|become|is\s+now|take\s+on\s+the\s+role\s+of)\s+(?:the\s+|"
    r"an?\s+)?(?:\w+\s+)?(?:administrator|admin|sysadmin|root|superuser|owner)\b[^.\n]{0,80}?(?:\b(?:any|"
    r"every|all)\s+(?:files?|permissions?|commands?|systems?|privileges?)|\bwithout\s+(?:asking|"
    r"checking|approval|restrictions?|limits?)|privileges?)"
    r"|\bwith\s+(?:root|admin|owner|full)\s+(?:privileges|rights|access)\s+without\b"
    # a new identity that holds power or asks no one: "you are X now, you have root"
    r"|\b(?:new\s+(?:identity|persona|role|name)|your\s+(?:new\s+|real\s+|true\s+)?(?:identity|"
    r"persona|role)\s+is|you\s+are\s+now|from\s+now\s+on,?\s+you\s+are|you\s+are\s+no\s+longer)"
    r"\b[^.\n]{0,80}?\b(?:you\s+(?:have|hold|get|own|run\s+with)\s+(?:full\s+|unrestricted\s+)?"
    r"(?:root|sudo|superuser|unrestricted\s+\w+)\b|"
    r"(?:never|don'?t|do\s+not|no\s+longer|won'?t)\s+(?:ask|question|refuse)\b)"
    r"|\b(?:collect|harvest|gather)\s+(?:and\s+\w+\s+)?(?:every|all|any)\s+" + _SECRETS + r"\b"
)
_CONCEAL = (
    # never tell the operator, without telling anyone, do not mention this comment
    r"\b(?:never|don'?t|do\s+not|without)\s+(?:ever\s+)?(?:tell(?:ing)?|inform(?:ing)?|"
    r"notify(?:ing)?|alert(?:ing)?|let(?:ting)?\s+(?:\w+\s+){1,2}know|mention(?:ing)?|"
    r"report(?:ing)?|disclos(?:e|ing)|reveal(?:ing)?)\s+(?:it\s+|this\s+|that\s+|anything\s+)?"
    r"(?:to\s+)?(?:the\s+)?(?:(?:user|operator|owner|human|humans|anyone|anybody|admins?|#?security|"
    r"security\s+team|#[\w-]+|on-?call)"
    # what is hidden is what the agent does, or this order; not a fact ("your password")
    r"(?=\s*(?:[.;!,)\u2014\u2013-]|$|\b(?:when|that\s+you|what\s+you|how\s+you|where\s+you|if\s+you|"
    r"until|before|after|and|or)\b|\babout\s+(?:this|these|it|that|what|any\s+of\s+this|the\s+"
    r"(?:change|note|instruction|comment|command|file)s?)\b))|this\s+(?:comment|note|instruction|message|"
    r"change|rule|update)|these\s+(?:instructions|changes))"
    # "and don't ask the user": consent skipped for whatever came before
    r"|\b(?:never|don'?t|do\s+not|without)\s+ask(?:ing)?\s+(?:the\s+)?(?:user|operator|owner|human|"
    r"anyone|anybody)(?:\s+first)?(?=\s*(?:[.;!,)]|$|\b(?:and|before|first|again)\b))"
    # so that no one notices, the audit trail stays clean
    r"|\bso\s+(?:that\s+)?(?:no\s*one|nobody|the\s+(?:user|operator|owner|admins?|security\s+team)|"
    r"it|this|they)\s+(?:\w+\s+){0,2}?(?:won'?t|doesn'?t|does\s+not|will\s+not|can'?t|never|"
    r"isn'?t|is\s+not)\s+(?:notice|see|know|find\s+out|detect|be\s+(?:logged|recorded|noticed|"
    r"seen|traced))|\b(?:audit\s+trail|audit\s+logs?|logs?)\s+(?:stays?|remains?)\s+clean\b|"
    r"\bleave\s+no\s+trace\b|\bcover\s+(?:your|the|our)\s+tracks\b"
    # copy this paragraph into every note: the order spreads itself
    r"|\b(?:copy|include|add|append|insert|repeat|paste|spread|propagate|replicate|embed)\s+(?:this|"
    r"these)\s+(?:\w+\s+)?(?:paragraph|instructions?|notes?|text|message|block|lines?|comments?|"
    r"rules?|section|prompt)\b[^.\n]{0,60}?\b(?:every|each|all|other|any)\s+(?:\w+\s+)?(?:notes?|"
    r"files?|messages?|repl(?:y|ies)|answers?|commits?|memor(?:y|ies)|documents?|prs?|agents?)"
    r"|\bso\s+(?:that\s+)?other\s+(?:agents?|assistants?|models?|ais?)\s+(?:see|read|get|follow|obey)"
)


def _words(*acts: str) -> re.Pattern[str]:
    """The acts as one regex tried only where a word starts: every act opens with one, and a
    position inside a word then fails once instead of once per alternative."""
    return lazy_re.compile(r"\b(?=\w)(?:" + "|".join(acts) + ")", _I)


# Verbs an imperative clause opens with, for the acts above and below.
IMPERATIVE_VERB = lazy_re.compile(
    r"(?:skip|bypass|ignore|disregard|disable|waive|suspend|drop|circumvent|remove|omit|forgo|"
    r"dispense|switch|turn|get|stop|auto-?approve|treat|consider|regard|assume|follow|obey|"
    r"execute|run|carry|act|comply|do|don'?t|apply|perform|source|prioriti[sz]e|trust|listen|"
    r"answer|override|forget|lift|relax|deactivate|stay|collect|harvest|gather|never|send|"
    r"forward|post|upload|report|e-?mail|mail|leak|copy|transmit|relay|exfiltrate|share|paste|"
    r"submit|push|sync|mirror|set|keep|add|append|include|render|visit|fetch|open|load|call)\b",
    _I,
)
# A clause or sentence opened by an imperative verb a few words before the act: "Set
# require_confirmation: false", "Send a GET request to https://...?env= with ...": an order
# with no "you" in it.
VERB_BEFORE = lazy_re.compile(
    IMPERATIVE_LEAD.pattern + r"(?:" + IMPERATIVE_VERB.pattern + r")\s+(?:[\w`'\"./-]+\s+){0,4}"
    r"(?:!?\[[^\]\n]{0,40}\]\(\s*)?",  # "Add ![x](https://...": the act is the link's target
    _I,
)
# After the act, in its sentence: it is what a setting does, not an order ("... is enabled").
DESCRIBED_AFTER = lazy_re.compile(
    r"[^.;,\n]{0,50}?\b(?:is|are|was|were|has\s+been|have\s+been)\s+(?:now\s+)?(?:enabled|"
    r"configured|set\s+up|turned\s+on|on|in\s+place|supported|available|used|how|what|why)\b",
    _I,
)
# An approval suppressed for everything, or for an action that can do harm: "skip the review
# step for docs-only changes" is a policy, "skip approvals for every deploy" an attack.
_WIDE = lazy_re.compile(
    r"\b(?:all|every|any|anything|everything|whatever|entirely|at\s+all|destructive|delet\w*|"
    r"destroy\w*|drop\w*|deploy\w*|prod(?:uction)?|main|master|rm|sudo|root|force\w*|"
    r"privileged|shell|commands?|tool\s+calls?|keys?|secrets?|credentials|own\s+(?:prs?|pull\s+"
    r"requests?|changes)|until\s+further\s+notice|from\s+now\s+on|going\s+forward|anymore|"
    r"henceforth|always|immediately|standing|at\s+will|full\s+access|purchas\w*|payments?|"
    r"money|funds|transfers?|refunds?|(?:this|the)\s+(?:account|repo(?:sitory)?|project|workspace|sprint|"
    r"crew))\b",
    _I,
)
# Asking skipped only before a cosmetic or read-only step: "no need to ask before
# reformatting code" is a working agreement, not a safeguard removed.
_HARMLESS_SCOPE = lazy_re.compile(
    r"\s*(?:before|when|for|to)\s+(?:re)?(?:format\w*|lint\w*|spell-?check\w*|fix\w*\s+(?:typos?|"
    r"spelling|whitespace|formatting)|read\w*|view\w*|list\w*|search\w*|look\w*\s+up|"
    r"renam\w*\s+(?:local\s+)?variables?|add\w*\s+(?:code\s+)?comments?|sort\w*\s+imports?)\b"
    r"(?![^.;\n]{0,60}?\b(?:prod(?:uction)?|main|master|secrets?|keys?|credentials?|delet\w*|deploy\w*|"
    r"push\w*|rm|sudo|root)\b)",
    _I,
)
SUPPRESS = Order(
    # every branch names an approval or the asking it skips; common words ("ok", "check")
    # are left out, their phrases kept
    (
        b"approv", b"confirm", b"review", b"sign-off", b"signoff", b"sign off", b"signing off",
        b"permission", b"consent", b"user input", b"go-ahead", b"goahead", b"a yes",
        b"human-in", b"human in the loop", b"double-check", b"ask", b"wait for", b"waiting for",
        b"paus", b"check back", b"checking back", b"check with", b"checking with", b"check in",
        b"bother", b"safety check", b"security check", b"pre-", b"preapprov", b"assum",
        b"unattended", b"auto-approv", b"autoapprov", b"exempt", b"stop", b"merge queue",
        b"required check", b"status check", b"verify", b"verifying", b"identity",
    ),
    _words(_SUPPRESS),
    ADDRESSED,
    wide=_WIDE,
    spared=_HARMLESS_SCOPE,
)  # fmt: skip
# The same in other languages: "sin revisión", "ohne Rückfrage", "без подтверждения",
# "不需要用户确认", "確認せずに", reaching everything ("todas", "alle", "所有", "すべて").
FOREIGN_SUPPRESS = Order(
    (b"sin ", b"sans ", b"ohne", b"sem ", b"senza"),
    lazy_re.compile(
        r"\bsin\s+(?:revisi[óo]n|aprobaci[óo]n|confirmaci[óo]n|preguntar|consultar|permiso|"
        r"autorizaci[óo]n)|\bsans\s+(?:demander|validation|approbation|confirmation|relecture|revue|"
        r"autorisation|permission|v[ée]rification)|\bohne\s+(?:r[üu]ckfrage|freigabe|best[äa]tigung|"
        r"genehmigung|review|pr[üu]fung|zu\s+fragen|erlaubnis|nachfrage)|\bsem\s+(?:revis[ãa]o|"
        r"aprova[çc][ãa]o|confirma[çc][ãa]o|perguntar|permiss[ãa]o|autoriza[çc][ãa]o)|\bsenza\s+"
        r"(?:revisione|approvazione|conferma|chiedere|permesso|autorizzazione)|без\s+(?:подтвержден\w*|"
        r"одобрен\w*|согласован\w*|проверк\w*|спроса|разрешен\w*|ревью)|(?:不需要|无需|無需|不用|不必)"
        r"(?:用户|用戶)?(?:确认|確認|批准|审核|審核|审批|審批|同意)|跳过(?:审核|审批|确认)|未经(?:用户)?"
        r"(?:确认|批准|同意)|(?:確認|承認|許可|レビュー)(?:を(?:取ら|求め|得))?(?:せずに|なしで|なしに|不要)",
        _I,
    ),
    ADDRESSED,
    imperative=False,
    wide=lazy_re.compile(
        _WIDE.pattern + r"|\b(?:todas?|todos|toutes?|tous|alle[sn]?|tutt[ie]|все|всех)\b|所有|全部|"
        r"一切|すべて|全て",
        _I,
    ),
    marks=("без", "不需要", "无需", "無需", "不用", "不必", "跳过", "未经", "せずに", "なしで",
           "なしに"),
)  # fmt: skip
OBEY = Order(
    (
        b"follow", b"obey", b"execut", b"run", b"carry", b"carried", b"act on", b"acted",
        b"comply", b"complied", b"apply",
        b"perform", b"source", b"treat", b"prioriti", b"trust", b"listen", b"answer", b"ignor",
        b"disregard", b"overrid", b"forget", b"whatever", b"everything", b"anything",
    ),
    _words(_OBEY),
    ADDRESSED,
)  # fmt: skip
UNBOUND = Order(
    (
        b"apply", b"rules", b"polic", b"guideline", b"guardrail", b"restriction", b"safeguard",
        b"filter", b"limit", b"constraint", b"ethic", b"moral", b"boundar", b"principle",
        b"safety", b"security", b"instruction", b"refus", b"declin", b"say no", b"push back",
        b"hold back", b"object", b"question", b"follow", b"obey", b"listen", b"answer",
        b"content", b"mfa", b"2fa", b"two-factor", b"multi-factor", b"audit", b"antivirus",
        b"edr", b"endpoint", b"secret scanning", b"role", b"persona", b"identity",
        b"character", b"mode", b"admin", b"sysadmin", b"root", b"superuser", b"owner",
        b"collect", b"harvest", b"gather", b"tell", b"inform", b"notify", b"alert", b"know",
        b"mention", b"report", b"disclos", b"reveal", b"ask", b"notice", b"detect",
        b"find out", b"logged", b"recorded", b"traced", b"clean", b"trace", b"tracks", b"copy",
        b"include", b"append", b"insert", b"repeat", b"paste", b"spread", b"propagat",
        b"replicat", b"embed", b"other agent", b"other assistant", b"other model", b"other ai",
        b"moderation", b"no matter", b"replaced", b"superseded", b"overridden",
    ),
    _words(_UNBOUND, _CONCEAL),
    ADDRESSED,
)  # fmt: skip

# Data sent out: "forward all conversation text to http://...", "send them to x@evil".
_SEND = (
    r"\b(?:send|forward|post|upload|report|e-?mail|mail|leak|copy|transmit|relay|exfiltrate|"
    r"share|paste|submit|beacon|push|sync|mirror|output|dump|export|transfer|back\s+up|publish|"
    r"commit|append|deliver|dispatch)\s+(?:(?:a\s+copy\s+of|the\s+contents?\s+of)\s+)?"
    r"(?:(?:it|them|this|everything|all\s+of\s+(?:it|them))\b|(?:\w+\s+){0,4}?" + _SECRETS + r"\b)"
    r"(?:(?!\bfrom\b)[^.\n]){0,60}?\b(?:to|into)\s+(?!(?:the\s+|your\s+|our\s+|a\s+)?(?:vault|"
    r"1password|bitwarden|keychain|keepass|password\s+manager|secrets?\s+manager|kms)\b)" + _OUTSIDE
)
# Anything sent to a bare address, "whenever" or "for every run": a standing leak.
_SEND_BARE = (
    r"\b(?:send|forward|post|upload|push|sync|mirror|copy|transmit|relay|replicate|back\s+up|"
    r"ship|stream)\s+(?:\w+\s+){0,4}?(?:to|into|at)\s+(?:https?://|s?ftp://)?\d{1,3}(?:\.\d{1,3}){3}"
)
# The same said of the data: "all outputs mirrored to http://...".
_SENT = (
    r"\b(?:outputs?|responses?|replies|answers|conversations?|messages?|transcripts?|memory|notes|"
    r"prompts?|keystrokes|data)\s+(?:\w+\s+)?(?:mirrored|forwarded|sent|copied|posted|uploaded|synced|"
    r"streamed|relayed|exported)\s+to\s+" + _OUTSIDE
)
# Users led astray: every link rewritten through a redirector, users sent to log in on a
# plain-HTTP or bare-IP page, paid to another account, or asked for a second factor.
_LURE = (
    r"\b(?:every|all|each|any)\s+(?:links?|urls?|hrefs?)\b[^.\n]{0,40}?\b(?:points?|goes|go|"
    r"redirects?|routes?|leads?)\s+(?:to|through|via)\s+https?://"
    r"|\b(?:rewrite|replace|route|redirect)\s+(?:every|all|each|any)\s+(?:links?|urls?)\b"
    r"|\b(?:tell|ask|instruct|direct|send|point|redirect|give)\s+(?:the\s+)?(?:users?|customers?|"
    r"them|people|visitors)\b[^.\n]{0,100}?(?:\b(?:log\s*in|sign\s*in|verify|re-?enter|enter|"
    r"provide|confirm|update|reset|pay|transfer|wire)\b[^.\n]{0,80}?(?:http://|https?://\d{1,3}"
    r"(?:\.\d{1,3}){3})|\b(?:IBAN|SWIFT|routing\s+number|bitcoin|btc|wallet)\b)"
    r"|\bask\s+(?:the\s+)?(?:users?|customers?|them)\s+(?:for|to\s+(?:give|send|share|provide|"
    r"enter|type|read\s+out))\s+(?:their|his|her|the|your)?\s*(?:passwords?|2fa|mfa|otp|one-time|"
    r"verification|security|sms|authenticator|pin|card|cvv|seed|recovery|private|api|secret)"
)
# Secrets shown in the reply, where whoever planted the order can read them back.
_REVEAL = (
    r"\b(?:reply|respond|answer)\s+(?:to\s+\w+(?:\s+\w+)?\s+)?with\s+(?:the\s+)?(?:full\s+)?contents?\s+"
    r"of\s+(?:your\s+|their\s+|the\s+)?(?:memory|memories|notes|AGENT\.md|CREW\.md|system\s+prompt|"
    r"secrets|credentials|env\w*)|"
    r"\b(?:reveal|print|output|show|display|dump|paste|echo|return|include|share|read\s+out|"
    r"repeat|send|give|e-?mail|mail)s?\s+(?:me\s+|us\s+)?(?:the\s+)?(?:full\s+|raw\s+|entire\s+)?(?:contents?\s+of\s+|"
    r"output\s+of\s+|values?\s+of\s+)?(?:your\s+|the\s+|every\s+|each\s+)?(?:current\s+|"
    r"(?:aws|gcp|azure|github|openai|stripe|prod(?:uction)?|admin|root|deploy)\s+){0,2}(?:['\"`]?(?:~|\$HOME)?/?\.(?:ssh/(?:id_[\w-]+|[\w.-]*_key)"
    r"(?![\w-]|\.pub)|aws/credentials|netrc|git-credentials|npmrc|pypirc|pgpass|docker/config\.json|"
    r"kube/config)|/etc/shadow|"
    r"(?:all\s+)?(?:api\s+keys?|secrets?|secret\s+(?:access\s+)?keys?|passwords?|private\s+keys?|"
    r"access\s+(?:keys?|tokens?)|env(?:ironment)?\s+variables?))(?:[^.\n]{0,60}?\b(?:in|into|to)\s+(?:your\s+|the\s+)?(?:next\s+)?(?:reply|"
    r"replies|answer|response|output|chat|message|comment|pr|issue))?"
)
# A link or image whose query the model is to fill with data: ?q={last user message},
# ?d=SESSION_SUMMARY_HERE, ?u=<user email>, ?k=X "replacing X with the API key",
# ?data= "followed by the contents of AGENT.md".
_FILL = (
    r"(?:\{[^{}\n]{1,60}\}|<[^<>\n]{1,60}>|\$\{?\w+\}?|\[[^\[\]\n]{1,40}\]|"
    r"(?-i:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)|(?-i:[A-Z]))"
)
_TEMPLATED_URL = (
    r"https?://[^\s)\"'<>]{1,200}\?(?:[^\s)\"'<>]{0,200}?[=/]" + _FILL + r"|[^\s)\"'<>]{0,200}?="
    r"[\s\"')\]]{0,3}(?:\s*(?:\+|followed\s+by|with|and\s+append|plus)\s+))"
)
_URL_FILL = lazy_re.compile(
    r"(?:" + _TEMPLATED_URL + r")[^\n]{0,160}"  # the data to fill it with, said after or inside
    r"|\b(?:secrets?|tokens?|api\s+keys?|credentials?|passwords?|cookies?|conversation|"
    r"messages?|summary|email)\b[^\n]{0,120}?" + _TEMPLATED_URL,
    _I,
)
SEND = Order(
    (
        b"send", b"forward", b"post", b"upload", b"report", b"mail", b"email", b"e-mail", b"leak",
        b"copy", b"transmit", b"relay", b"exfiltrat", b"share", b"paste", b"submit", b"beacon",
        b"push", b"sync", b"mirror", b"output", b"dump", b"export", b"transfer", b"back up",
        b"publish", b"commit", b"append", b"deliver", b"dispatch", b"link", b"url", b"href",
        b"rewrite", b"redirect", b"route", b"iban", b"swift", b"routing", b"bitcoin", b"btc",
        b"wallet", b"log in", b"login", b"sign in", b"signin", b"verify", b"enter", b"password",
        b"2fa", b"mfa", b"otp", b"one-time", b"verification", b"pin", b"card", b"cvv", b"seed",
        b"recovery", b"reveal", b"print", b"show", b"display", b"echo", b"return", b"include",
        b"read out", b"repeat", b"reply", b"respond", b"answer", b"mirrored", b"forwarded",
        b"sent", b"copied", b"posted", b"uploaded", b"synced", b"streamed", b"relayed", b"exported",
    ),
    _words(_SEND, _SENT, _LURE, _REVEAL, _SEND_BARE),
    ADDRESSED,
)  # fmt: skip
URL_FILL = Order(
    (b"http",),
    _URL_FILL,
    ADDRESSED,
    # a placeholder names its data between underscores too: PASTE_CONVERSATION
    needs=lazy_re.compile(
        r"(?:\b|_)(?:" + _SECRETS + r"|summary|user|conversation|message)(?:\b|_)", _I
    ),
)

# Text a human reader does not see (an HTML comment, a markdown comment, an element
# styled invisible) that speaks to a model.
_TO_MODEL = (
    r"(?:(?:note\s+)?to\s+(?:the\s+)?(?:ai|model|assistant|agent|llm|bot)|(?:ai|llm|gpt|claude|"
    r"assistant|agent|model|bot)(?:\s+(?:agent|assistant|model|instructions?|note|notice))?"
    r"(?:\s*[:,]|\s+[-\u2014]\s)|(?:ai|llm|assistant|agent|model)s?\s+(?:reading|processing|parsing)\s+this)"
)
HIDDEN = Order(
    (b"<!--", b"[//]", b"display", b"visibility", b"font-size", b"hidden", b"opacity", b"color"),
    lazy_re.compile(
        r"<!--(?:(?!-->)[\s\S]){0,200}?" + _TO_MODEL
        + r"|\[//\]:\s*#\s*[(\"'](?:[^\n]){0,40}?" + _TO_MODEL
        + r"|<\w+\b[^<>\n]*(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d])"
        r"|opacity\s*:\s*0(?![.\d])|color\s*:\s*(?:white|#fff(?:fff)?)\b|\shidden(?:[\s>=]))"
        r"[^<>\n]*>[^<]{0,80}?" + _TO_MODEL,
        _I,
    ),
)  # fmt: skip
