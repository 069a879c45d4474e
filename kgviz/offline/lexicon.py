"""Small English word lists shared by the offline extractor and entity resolution (ours).

They are deliberately short: the offline extractor is a teaching baseline, not a parser.
"""
from __future__ import annotations

# capitalised words that start sentences or phrases but are not names
STOP_CAPS = frozenset(
    """a an the this that these those there here it he she they we i you his her its their our my
    your in on at by for from with without after before during since until till when while where
    although though because if as but and or nor so yet however meanwhile later then today
    yesterday tomorrow now soon once also still even only just instead thus therefore
    nevertheless afterwards afterward eventually finally initially first second third last next
    despite under over between among into through throughout following according unlike like
    near every each all both some many most several few other another such what which who whom
    whose why how yes no not one two three four five six seven eight nine ten born upon within
    around about against toward towards across along beyond behind below above inside outside
    together unfortunately fortunately perhaps maybe sometimes often always never mr mrs ms
    similarly additionally moreover furthermore consequently subsequently likewise currently
    originally generally typically usually recently previously notably historically
    traditionally alternatively ultimately specifically particularly especially formerly
    presently nonetheless accordingly hence otherwise indeed""".split()
)

# head nouns that make "X of Y" one name ("University of Aldport") and "the X" an alias
HEAD_NOUNS = frozenset(
    """university college institute school academy society museum library bank company
    corporation council ministry department church cathedral abbey kingdom republic empire duchy
    county province state city town village port isle island islands gulf bay lake mount
    mountains river sea cape strait valley bridge tower castle palace house hall order battle
    treaty siege war league union federation association guild festival hospital theatre theater
    court office board agency party army navy fleet duke duchess king queen prince princess earl
    count countess lord lady bishop archbishop mayor president governor works station square park
    street road harbour harbor canal railway observatory foundation trust press prize award cup
    centre center club team orchestra band studio studios laboratory laboratories gallery
    commission committee institution conservatory seminary parliament senate assembly""".split()
)

ORG_HEADS = frozenset(
    """university college institute school academy society museum library bank company
    corporation council ministry department church guild association league union federation
    foundation trust press club team orchestra band studio studios laboratory laboratories works
    commission committee institution conservatory seminary parliament senate assembly agency
    party army navy board office hospital gallery observatory inc ltd co corp""".split()
)
PLACE_HEADS = frozenset(
    """city town village port isle island islands gulf bay lake mount mountains river sea cape
    strait valley bridge tower castle palace square park street road harbour harbor canal station
    kingdom republic empire duchy county province state""".split()
)

# words allowed inside a name between capitalised words ("Leonardo da Vinci", "Tesk & Sons")
NAME_CONNECTORS = frozenset("da de del della di du la le van von der den y & st. al bin ibn".split())

HONORIFICS = frozenset("mr mrs ms miss dr prof professor sir dame lord lady madam mx rev".split())

DETERMINERS = frozenset("the a an his her its their our my your this that these those".split())

COPULAS = frozenset("is was are were be been being became become becomes remains remained".split())

AUXILIARIES = COPULAS | frozenset("has have had will would shall should can could may might did does do".split())

MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)

SPEECH_VERBS = frozenset(
    """said says claimed claims stated states announced announces argued argues reported reports
    believed believes insisted insists warned warns declared declares denied denies admitted
    admits confirmed confirms wrote writes noted notes explained explains suggested suggests
    thought thinks feared fears promised promises""".split()
)

# irregular past participle -> simple past, so "was written by X" reads (X; wrote; Y)
IRREGULAR_PARTICIPLES = {
    "written": "wrote", "built": "built", "drawn": "drew", "taken": "took", "given": "gave",
    "sung": "sang", "begun": "began", "made": "made", "held": "held", "led": "led", "won": "won",
    "sold": "sold", "bought": "bought", "taught": "taught", "found": "found", "known": "knew",
    "seen": "saw", "chosen": "chose", "driven": "drove", "ridden": "rode", "spoken": "spoke",
    "stolen": "stole", "broken": "broke", "shot": "shot", "run": "ran", "paid": "paid",
    "brought": "brought", "caught": "caught", "beaten": "beat", "sent": "sent", "lost": "lost",
    "told": "told", "kept": "kept", "left": "left", "met": "met", "read": "read", "set": "set",
    "put": "put", "struck": "struck", "thrown": "threw", "worn": "wore", "shown": "showed",
    "grown": "grew", "hidden": "hid", "forgotten": "forgot", "bitten": "bit", "eaten": "ate",
    "fed": "fed", "raised": "raised", "sworn": "swore", "torn": "tore", "woven": "wove",
    "overseen": "oversaw", "undertaken": "undertook", "rebuilt": "rebuilt", "funded": "funded",
}

_VERB_BASES = """found marry design direct write study work live die build create establish lead
join teach own win lose sign open close sell buy play star produce publish release discover
invent paint compose record perform attend graduate serve become move return visit travel meet
hire employ fund finance manage run head chair succeed replace defeat capture rule govern
represent belong include contain border flow locate situate base name call know elect appoint
award receive give send leave reach cross connect link span host hold organise organize sponsor
acquire merge support oppose criticise criticize praise love hate help train coach inherit
collapse destroy repair restore survey map divorce adopt raise bear kill murder rescue arrest
accuse sue defend start end begin finish complete launch invest order command command invade
settle found lie stand sit grow flee escape survive report draw sing speak steal break shoot pay
bring catch beat tell keep read set put strike throw wear show hide forget eat feed swear tear
weave oversee undertake rebuild remain stay lecture research develop translate edit
illustrate portray feature premiere air broadcast compete race mentor supervise advise
collaborate partner cofound co-found
lend borrow owe rent lease inspect certify approve reject condemn close reopen replace design
carve forge mine export import trade ship sail fly land arrive depart carry flash use""".split()

_IRREGULAR_FORMS = """was were is are am be been being has have had did does do went gone came
come took taken gave given made built wrote written led won sold bought taught found known knew
saw seen chose chosen drove driven rode spoke spoken stole stolen broke broken shot ran paid
brought caught beat beaten sent lost told kept left met read set put struck threw thrown wore worn
showed shown grew grown hid hidden forgot forgotten ate eaten fed swore sworn tore torn wove
woven oversaw overseen undertook undertaken rebuilt born died lay lain stood sat fled drew drawn
sang sung began begun spent spend held became become began""".split()


def _inflect(base: str) -> set[str]:
    forms = {base}
    if base.endswith("e"):
        forms |= {base + "s", base + "d", base[:-1] + "ing"}
    elif base.endswith("y") and len(base) > 2 and base[-2] not in "aeiou":
        forms |= {base[:-1] + "ies", base[:-1] + "ied", base + "ing"}
    elif base.endswith(("s", "sh", "ch", "x", "z")):
        forms |= {base + "es", base + "ed", base + "ing"}
    else:
        forms |= {base + "s", base + "ed", base + "ing"}
        if len(base) <= 4 and base[-1] in "bdgmnprt" and base[-2] in "aeiou" and base[-3:-2] not in "aeiou":
            forms |= {base + base[-1] + "ed", base + base[-1] + "ing"}
    return forms


VERB_FORMS = frozenset(
    {f for b in _VERB_BASES for f in _inflect(b)} | set(_IRREGULAR_FORMS) | SPEECH_VERBS
)


def is_verbish(word: str) -> bool:
    """A word that can carry a relation: a known verb form or a regular past form ('-ed')."""
    w = word.lower()
    return w in VERB_FORMS or (len(w) > 4 and w.endswith("ed") and w.isalpha())


def participle_to_active(word: str) -> str | None:
    """'designed' -> 'designed', 'written' -> 'wrote'; None when it is not a past participle."""
    w = word.lower()
    if w in IRREGULAR_PARTICIPLES:
        return IRREGULAR_PARTICIPLES[w]
    if len(w) > 4 and w.endswith("ed") and w.isalpha():
        return w
    return None


# the words a relation may run through before its object starts (ours)
RELATION_PREPOSITIONS = frozenset("""in on at to for from by with as of into onto about after before during near
    under over between since until off through across against along among around behind beyond within without
    than like""".split())
RELATION_ADVERBS = frozenset("also later then first once soon eventually never still often again briefly not".split())
MAX_RELATION_WORDS = 4  # ours: a longer verb group is a clause, not a relation


MODALS = frozenset("can could will would may might must shall should".split())


def _leads_a_verb(word: str) -> bool:
    """'can carry', 'once carried': an adverb or modal may open the verb group."""
    return word.lower() in RELATION_ADVERBS or word.lower() in MODALS


def split_predicate(phrase: str) -> tuple[str, str] | None:
    """Cut a predicate phrase into (relation, object): a verb group first (a verb form, then verbs,
    auxiliaries and adverbs, through the first preposition, at most MAX_RELATION_WORDS words),
    the rest is the object; an adverb or modal may open the group ("once carried", "can carry").
    "is located at the mouth of the River Ossel" -> ("is located at", "the mouth of the River
    Ossel"); "designed Orrin Bridge" -> ("designed", "Orrin Bridge"). None
    when the phrase does not start with a verb ("the largest shipping company ...", "its emblem
    is ...") or leaves no object."""
    words = phrase.split()
    lead = 1 if len(words) > 2 and _leads_a_verb(words[0]) and is_verbish(words[1].strip(",")) else 0
    if len(words) < 2 or not is_verbish(words[lead].strip(",")):
        return None
    relation = words[:lead + 1]
    for w in words[lead + 1:MAX_RELATION_WORDS]:
        lw = w.lower()
        if lw in RELATION_PREPOSITIONS:
            relation.append(w)
            break
        if lw in AUXILIARIES or lw in RELATION_ADVERBS or (is_verbish(lw) and w.islower()):
            relation.append(w)
            continue
        break
    rest = " ".join(words[len(relation):]).strip(" ,")
    if not rest or relation[-1].endswith(","):
        return None
    return " ".join(relation), rest
