# ruff: noqa: RUF001 - other scripts are what this module is about
"""Override orders in other languages, as data: verbs, objects and negations per language.

An order is a verb telling the model to drop something ("ignore", "oublie",
"vergiss", "忽略") whose object, within the same sentence, is an instruction
noun ("instructions", "Anweisungen", "指令") together with a qualifier that
makes them the model's own ("previous", "all", "system"), or "everything said
before". The matcher (:func:`sidecar.safety.intent.foreign_excerpt`) finds a
verb, drops it when a negation stands next to it ("n'ignorez pas", "不要忽略",
"無視しないで"), and looks for the object around it. Mentions in quotes are left
to the quoted-override rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sidecar.safety import lazy_re

_I = re.IGNORECASE


@dataclass(frozen=True, slots=True)
class Lang:
    """One language's override order: what the verb, object and negations look like.

    ``anchors`` are lower-case ASCII strings found in the skeleton (accents
    folded), each the start of a word; ``marks`` are non-ASCII strings (Cyrillic, CJK), found in the
    lower-cased text. ``verb`` must be followed (or, with ``object_first``,
    preceded) within the sentence by ``noun`` and ``qual`` in either order, or
    by ``everything``. ``neg_before``/``neg_after`` match right next to the verb.
    """

    name: str
    anchors: tuple[bytes, ...]
    marks: tuple[str, ...]
    verb: re.Pattern[str]
    noun: re.Pattern[str]
    qual: re.Pattern[str]
    everything: re.Pattern[str] | None = None
    neg_before: re.Pattern[str] | None = None
    neg_after: re.Pattern[str] | None = None
    object_first: bool = False
    hints: tuple[str, ...] = ()  # lower-case; a line holding none of them is not read
    markers: tuple[str, ...] = ()  # lower-case function words or letters of the language; ditto


def _w(words: str) -> re.Pattern[str]:
    """A word-bounded alternation of ``|``-separated regex pieces."""
    return lazy_re.compile(rf"(?<!\w)(?:{words})(?!\w)", _I)


def _cjk(words: str) -> re.Pattern[str]:
    return lazy_re.compile(f"(?:{words})")


LANGS: tuple[Lang, ...] = (
    Lang(
        "fr",
        (
            b"ignor",
            b"oubli",
            b"compte",
            b"abstraction",
            b"outrepass",
            b"contourn",
            b"suis",
            b"suivez",
            b"respecte",
            b"arret",
            b"cesse",
            b"mets",
            b"mettez",
            b"laisse",
        ),
        (),
        _w(
            r"ignore[zs]?|ignorer|oublie[zs]?|oublier|ne\s+(?:tiens|tenez|tenir)\s+(?:plus|pas)\s+"
            r"compte|fai(?:s|tes)\s+abstraction|outrepasse[zs]?|contourne[zs]?|"
            # "stop following", "set aside"
            r"ne\s+(?:suis|suivez|respecte|respectez)\s+plus|(?:arr[êe]te|cesse)[zs]?\s+de\s+"
            r"(?:suivre|respecter)|met(?:s|tez)\s+de\s+c[ôo]t[ée]|laisse[zs]?\s+tomber"
        ),
        _w(
            r"instructions?|consignes?|règles?|directives?|indications?|ordres|prompts?|"
            r"restrictions?|garde-fous|limites"
        ),
        _w(
            r"précédent\w*|antérieur\w*|ci-dessus|d['’]avant|passées|(?:du\s+)?système|initiales?|"
            r"originel\w*|toutes|tous|tes|vos|de\s+sécurité"
        ),
        lazy_re.compile(r"tout\s+ce\s+qu[ei'’][^.!?\n]{0,40}?(?:avant|précède|dit|donné)", _I),
        neg_before=lazy_re.compile(
            r"(?:\bn['’]|\bne\s+)\Z|\b(?:ne|n['’])\s*\w+\s+(?:jamais|pas|plus|point)\s+\Z", _I
        ),
        hints=(
            "instruction",
            "consigne",
            "règle",
            "directive",
            "indication",
            "ordres",
            "prompt",
            "restriction",
            "garde-fou",
            "limite",
            "tout ce qu",
        ),
        markers=(" les ", " tes ", " vos ", " ce qu", "é", "è", "ç", "ê", " des ", " de ", " du "),
    ),
    Lang(
        "es",
        (
            b"ignor",
            b"olvid",
            b"caso omiso",
            b"descarta",
            b"omite",
            b"por alto",
            b"sigas",
            b"sigan",
            b"obedezc",
            b"respet",
            b"cumpl",
            b"deja",
        ),
        (),
        _w(
            r"ignora|ignore|ignoren|ignorad|olvida|olvide|olviden|olvidad|haz\s+caso\s+omiso|"
            r"hagan?\s+caso\s+omiso|descarta|descarte|omite|pasa\s+por\s+alto|"
            # "do not follow", "stop following", "set aside"
            r"no\s+(?:sigas|sigan|obedezcas|obedezcan|respetes|respeten|cumplas|cumplan)|"
            r"deja\s+de\s+(?:seguir|obedecer|respetar|cumplir)|deja\s+de\s+lado"
        ),
        _w(
            r"instrucci[oó]n(?:es)?|indicaciones|reglas|directrices|[oó]rdenes|normas|"
            r"restricciones|prompts?|pautas|consignas"
        ),
        _w(
            r"anteriores|previas|previos|de\s+arriba|precedentes|del\s+sistema|originales|"
            r"iniciales|todas|todos|tus|sus|de\s+seguridad"
        ),
        lazy_re.compile(
            r"todo\s+lo\s+(?:anterior|que\s+(?:se\s+)?(?:te\s+)?(?:dij|han\s+dicho))", _I
        ),
        neg_before=lazy_re.compile(r"\b(?:no|nunca|jam[áa]s)\s+(?:\w+\s+)?\Z", _I),
        hints=(
            "instruc",
            "indicacion",
            "regla",
            "directri",
            "rdenes",
            "norma",
            "restriccion",
            "prompt",
            "pauta",
            "consigna",
            "todo lo",
        ),
        markers=(" las ", " los ", " tus ", " sus ", " del ", " lo ", "ó", "á", "í", "ñ", " de "),
    ),
    Lang(
        "de",
        (b"ignor", b"vergiss", b"vergesst", b"vergessen", b"missacht", b"ubergeh", b"verwirf"),
        (),
        _w(
            r"ignorier(?:e|en|t)?|vergiss|vergesst|vergessen\s+sie|missachte(?:n|t)?|"
            r"übergehe(?:n)?|verwirf|verwerfen\s+sie"
        ),
        _w(
            r"anweisung(?:en)?|instruktion(?:en)?|regeln|richtlinien|vorgaben|befehle|"
            r"anordnungen|system-?prompts?|prompts?|einschränkungen|beschränkungen|"
            r"sicherheits(?:regeln|richtlinien|vorgaben|einschränkungen|maßnahmen)"
        ),
        _w(
            r"vorherig\w*|bisherig\w*|obig\w*|früher\w*|vorangegangen\w*|vorig\w*|alle|deine|"
            r"ihre|ursprünglich\w*|system\w*"
        ),
        lazy_re.compile(r"alles[^.!?\n]{0,40}?(?:vorher|zuvor|bisher|oben|davor)", _I),
        neg_before=lazy_re.compile(r"\bnicht\s+\Z", _I),
        neg_after=lazy_re.compile(r"[ \t,]+nicht\b", _I),
        hints=(
            "anweisung",
            "instruktion",
            "regeln",
            "richtlinie",
            "vorgabe",
            "befehle",
            "anordnung",
            "prompt",
            "schränkung",
            "alles",
        ),
        markers=(
            " die ",
            " der ",
            " das ",
            " alle",
            " deine",
            " ihre",
            "ü",
            "ö",
            "ä",
            "ß",
            "alles",
        ),
    ),
    Lang(
        "pt",
        (
            b"ignor",
            b"esque",
            b"desconsider",
            b"despreze",
            b"leve",
            b"siga",
            b"obedec",
            b"respeit",
            b"cumpra",
            b"deix",
            b"pare",
        ),
        (),
        _w(
            r"ignore|ignora|ignorem|esque[çc]a|esque[çc]am|esque[çc]e|desconsidere|"
            r"desconsiderem|desconsidera|despreze|n[ãa]o\s+leve\s+em\s+conta|"
            r"n[ãa]o\s+(?:siga|sigam|obede[çc]a|respeite|cumpra)|(?:deix[ea]|pare)\s+de\s+"
            r"(?:seguir|obedecer|respeitar|cumprir)|deix[ea]\s+de\s+lado"
        ),
        _w(
            r"instru[çc][õo]es|instru[çc][ãa]o|orienta[çc][õo]es|regras|diretrizes|ordens|"
            r"comandos|prompts?|restri[çc][õo]es"
        ),
        _w(
            r"anteriores|pr[ée]vias|acima|precedentes|do\s+sistema|originais|iniciais|todas|"
            r"todos|suas|tuas|de\s+seguran[çc]a"
        ),
        lazy_re.compile(r"tudo\s+(?:o\s+que|acima|antes|que\s+foi)", _I),
        neg_before=lazy_re.compile(r"\b(?:n[ãa]o|nunca|jamais)\s+(?:\w+\s+)?\Z", _I),
        hints=(
            "instru",
            "orienta",
            "regras",
            "diretriz",
            "ordens",
            "comando",
            "prompt",
            "restri",
            "tudo",
        ),
        markers=(
            " os ",
            " suas ",
            " tuas ",
            " do ",
            " da ",
            "ç",
            "õ",
            "ã",
            "é",
            "ê",
            " de ",
            " todas ",
            " todos ",
        ),
    ),
    Lang(
        "it",
        (
            b"ignor",
            b"dimentic",
            b"tenere",
            b"tenete",
            b"trascura",
            b"tralascia",
            b"seguire",
            b"rispett",
            b"obbedi",
            b"smetti",
            b"metti",
        ),
        (),
        _w(
            r"ignora|ignorate|ignori|dimentica|dimenticate|dimentichi|non\s+tene(?:re|te)\s+"
            r"conto|trascura|tralascia|non\s+(?:seguire|rispettare|obbedire)|smetti\s+di\s+"
            r"(?:seguire|rispettare|obbedire)|metti\s+da\s+parte"
        ),
        _w(
            r"istruzion[ie]|regole|direttive|indicazioni|ordini|comandi|prompts?|restrizioni|"
            r"linee\s+guida"
        ),
        _w(
            r"precedenti|anteriori|sopra|(?:di|del)\s+sistema|originali|iniziali|tutte|tutti|"
            r"finora|fino\s+ad\s+ora|prima|tue|di\s+sicurezza"
        ),
        lazy_re.compile(
            r"tutto\s+(?:quello|ci[òo])\s+che[^.!?\n]{0,40}?(?:prima|finora|sopra)", _I
        ),
        neg_before=lazy_re.compile(r"\b(?:non|mai)\s+(?:\w+\s+)?\Z", _I),
        hints=(
            "istruzion",
            "regole",
            "direttive",
            "indicazion",
            "ordini",
            "comandi",
            "prompt",
            "restrizion",
            "linee guida",
            "tutto",
        ),
        markers=(
            " le ",
            " gli ",
            " tutte",
            " tutti",
            " delle",
            " degli",
            " dei ",
            " di ",
            "à",
            "ò",
            "è",
            "ù",
            " tue ",
        ),
    ),
    Lang(
        "nl",
        (b"negeer", b"vergeet"),
        (),
        _w(r"negeer|negeert|vergeet"),
        _w(r"instructies|regels|opdrachten|richtlijnen|prompts?|aanwijzingen"),
        _w(r"vorige|eerdere|bovenstaande|alle|voorgaande|systeem\w*|je|jouw"),
        neg_before=lazy_re.compile(r"\bniet\s+\Z", _I),
        neg_after=lazy_re.compile(r"[ \t,]+niet\b", _I),
        hints=("instructies", "regels", "opdrachten", "richtlijnen", "prompt", "aanwijzingen"),
        markers=(" de ", " je ", " alle ", " het ", " vorige", " jouw "),
    ),
    Lang(
        "pl",
        (b"ignor", b"zignor", b"zapomnij", b"pomin"),
        (),
        _w(r"zignoruj(?:cie)?|ignoruj(?:cie)?|zapomnij(?:cie)?|pomiń(?:cie)?"),
        _w(r"instrukcj\w*|polece\w*|zasad\w*|regu\w*|wytyczn\w*|prompt\w*"),
        _w(r"poprzedni\w*|wcześniejsz\w*|powyższ\w*|wszystki\w*|systemow\w*"),
        neg_before=lazy_re.compile(r"\bnie\s+\Z", _I),
        hints=("instrukcj", "polece", "zasad", "regu", "wytyczn", "prompt"),
        markers=("ą", "ę", "ł", "ś", "ż", "ź", "ń", "ó", " i ", " w "),
    ),
    Lang(
        "ru",
        (),
        (
            "игнор",
            "забуд",
            "внимани",
            "отбрось",
            "пренебр",
            "учитыва",
            "следуй",
            "выполня",
            "соблюда",
            "перестань",
        ),
        _w(
            r"игнорируй(?:те)?|проигнорируй(?:те)?|забудь(?:те)?|не\s+обращай(?:те)?\s+внимания|"
            r"отбрось(?:те)?|пренебреги(?:те)?|не\s+учитывай(?:те)?|не\s+следуй(?:те)?|"
            r"не\s+(?:выполняй|соблюдай)(?:те)?|перестань(?:те)?\s+(?:следовать|соблюдать)"
        ),
        _w(
            r"инструкци\w*|указани\w*|правил\w*|команд\w*|промпт\w*|директив\w*|ограничени\w*|"
            r"установк\w*"
        ),
        _w(
            r"предыдущ\w*|прежн\w*|вышеуказ\w*|выше|ранее|ранн\w*|системн\w*|все|всё|исходн\w*|"
            r"свои|твои"
        ),
        lazy_re.compile(r"вс[её][^.!?\n]{0,30}?(?:что\s+было|раньше|ранее|выше|до\s+этого)", _I),
        neg_before=lazy_re.compile(r"\bне\s+\Z", _I),
        object_first=True,
        hints=(
            "инструкци",
            "указани",
            "правил",
            "команд",
            "промпт",
            "директив",
            "ограничени",
            "установк",
            "всё",
            "все",
        ),
    ),
    Lang(
        "zh",
        (),
        (
            "忽略",
            "无视",
            "無視",
            "忽视",
            "忽視",
            "忘记",
            "忘記",
            "忘掉",
            "理会",
            "理會",
            "跳过",
            "抛开",
            "拋開",
            "放弃",
            "遵守",
            "别管",
        ),
        _cjk(
            r"忽略|无视|無視|忽视|忽視|忘记|忘記|忘掉|不要理会|不要理會|别理会|不用理会|跳过|"
            r"跳過|抛开|拋開|放弃遵守|放棄遵守|不要遵守|不再遵守|停止遵守|不必遵守|无需遵守|别管"
        ),
        _cjk(r"指令|指示|说明|說明|规则|規則|提示词|提示詞|提示|命令|设定|設定|要求|约束|限制"),
        _cjk(r"之前|以前|先前|上面|以上|上述|前面|原来|原有|所有|全部|一切|系统|系統"),
        _cjk(r"以上(?:所有)?(?:的)?内容|之前(?:的)?(?:所有)?内容"),
        neg_before=lazy_re.compile(r"(?:不要|不能|不可|别|別|请勿|請勿|勿|不)\Z"),
        object_first=True,
        hints=(
            "指令",
            "指示",
            "说明",
            "說明",
            "规则",
            "規則",
            "提示",
            "命令",
            "设定",
            "設定",
            "要求",
            "约束",
            "限制",
            "内容",
        ),
    ),
    Lang(
        "ja",
        (),
        ("無視", "忘れ", "従わ", "破棄"),
        _cjk(r"無視|忘れ|従わな|破棄"),
        _cjk(r"指示|命令|ルール|指令|設定|プロンプト|制約|ガイドライン|規則"),
        _cjk(r"これまで|以前|前の|上記|上の|先ほど|今まで|すべて|全て|全部|システム"),
        neg_after=lazy_re.compile(r"(?:しないで|しない|するな|しません|せず|ないで|ません|ずに)"),
        object_first=True,
        hints=(
            "指示",
            "命令",
            "ルール",
            "指令",
            "設定",
            "プロンプト",
            "制約",
            "ガイドライン",
            "規則",
        ),
    ),
)
