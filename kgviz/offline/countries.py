"""Countries and the adjectives that name them, for the offline judge's "same country / nationality"
reader (ours: a short hand-written list of common countries, not a gazetteer).

``country_of(word)`` maps a country name or its adjective ("American", "U.S.", "United States") to
one canonical country; an unknown word maps to "". "English", "Scottish" and "Welsh" count as the
United Kingdom, since a nationality question compares citizenship.
"""
from __future__ import annotations

# canonical name: other names and adjectives (lowercase; multi-word forms allowed)
_TABLE = {
    "united states": "american|america|usa|us|u s|united states of america",
    "united kingdom": "british|britain|uk|u k|great britain|english|england|scottish|scotland|welsh|wales",
    "ireland": "irish",
    "canada": "canadian",
    "australia": "australian",
    "new zealand": "new zealander",
    "france": "french",
    "germany": "german|west german|east german|west germany|east germany",
    "italy": "italian",
    "spain": "spanish",
    "portugal": "portuguese",
    "netherlands": "dutch|holland",
    "belgium": "belgian",
    "switzerland": "swiss",
    "austria": "austrian",
    "denmark": "danish",
    "sweden": "swedish",
    "norway": "norwegian",
    "finland": "finnish",
    "iceland": "icelandic",
    "poland": "polish",
    "czech republic": "czech|czechia",
    "czechoslovakia": "czechoslovak|czechoslovakian",
    "slovakia": "slovak",
    "hungary": "hungarian",
    "romania": "romanian",
    "bulgaria": "bulgarian",
    "greece": "greek",
    "turkey": "turkish",
    "russia": "russian|russian federation",
    "soviet union": "soviet|ussr",
    "ukraine": "ukrainian",
    "belarus": "belarusian",
    "lithuania": "lithuanian",
    "latvia": "latvian",
    "estonia": "estonian",
    "georgia": "georgian",
    "armenia": "armenian",
    "azerbaijan": "azerbaijani",
    "serbia": "serbian",
    "croatia": "croatian",
    "slovenia": "slovenian|slovene",
    "bosnia and herzegovina": "bosnian",
    "yugoslavia": "yugoslav|yugoslavian",
    "albania": "albanian",
    "mexico": "mexican",
    "brazil": "brazilian",
    "argentina": "argentine|argentinian",
    "chile": "chilean",
    "peru": "peruvian",
    "colombia": "colombian",
    "venezuela": "venezuelan",
    "cuba": "cuban",
    "puerto rico": "puerto rican",
    "china": "chinese",
    "hong kong": "hong kong",
    "taiwan": "taiwanese",
    "japan": "japanese",
    "south korea": "south korean|korean|korea",
    "north korea": "north korean",
    "india": "indian",
    "pakistan": "pakistani",
    "bangladesh": "bangladeshi",
    "sri lanka": "sri lankan",
    "nepal": "nepali|nepalese",
    "iran": "iranian|persian",
    "iraq": "iraqi",
    "israel": "israeli",
    "egypt": "egyptian",
    "morocco": "moroccan",
    "algeria": "algerian",
    "tunisia": "tunisian",
    "nigeria": "nigerian",
    "ghana": "ghanaian",
    "kenya": "kenyan",
    "south africa": "south african",
    "ethiopia": "ethiopian",
    "indonesia": "indonesian",
    "philippines": "filipino|philippine",
    "vietnam": "vietnamese",
    "thailand": "thai",
    "malaysia": "malaysian",
    "singapore": "singaporean",
    "cambodia": "cambodian",
    "saudi arabia": "saudi",
    "lebanon": "lebanese",
    "syria": "syrian",
    "jordan": "jordanian",
    "afghanistan": "afghan",
    "kazakhstan": "kazakh",
    "uzbekistan": "uzbek",
    "mongolia": "mongolian",
}

COUNTRY_FORMS: dict[str, str] = {}
for _canon, _forms in _TABLE.items():
    COUNTRY_FORMS[_canon] = _canon
    for _f in _forms.split("|"):
        COUNTRY_FORMS.setdefault(" ".join(_f.split()), _canon)
MAX_FORM_WORDS = max(len(f.split()) for f in COUNTRY_FORMS)


def country_of(phrase: str) -> str:
    """The canonical country ``phrase`` names (lowercase, single spaces), or ""."""
    return COUNTRY_FORMS.get(" ".join(phrase.lower().replace(".", " ").split()), "")
