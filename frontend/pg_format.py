"""PostgreSQL's ``to_char(timestamp, template)`` template patterns, translated into Spark SQL.

The template is read as PostgreSQL's ``parse_format`` reads it: at each position the longest
keyword of PostgreSQL's list that matches *with its exact case* (``MI`` and ``mi`` are minutes, ``Mi``
is the letter M and then ``i``, ISO year's last digit; ``mm`` is the month, not minutes), optionally
after the prefixes ``FM`` (no padding, but for fractions of a second) and ``TM`` (names unpadded:
English names are the C locale's translations) and followed by the
suffix ``TH``/``th`` (an ordinal: 1st, 2nd, 11th); text in double quotes is copied (``\\"`` is a
quote inside it); ``\\"`` outside quotes is a quote; any other character is copied. Name patterns
print in the keyword's case (``MONTH`` → ``JANUARY``, ``Month`` → ``January``, ``month`` →
``january``), blank-padded to 9 characters unless ``FM``.

Each pattern becomes one Spark SQL expression over the timestamp ``{0}`` (UTC) — numbers with
``format_string`` and PostgreSQL's zero padding, names from fixed English tables (never Spark's
locale) — joined by ``concat``; NULL for a NULL timestamp. Patterns not translated (time zones,
ISO day of year, spelled-out numbers) fail with 0A000 naming them.

>>> to_char_template('HH24:MI')
"IF({0} IS NULL, NULL, concat(format_string('%02d', hour({0})), ':', format_string('%02d', minute({0}))))"
>>> parse_template('FMDDth "of" Month')
[('DD', 'FM', 'th'), ' ', '"of"', ' ', ('Month', '', '')]
"""

from __future__ import annotations

from frontend.expr import spark_string
from risingspark.errors import FeatureNotSupported

_MICROS = "pmod(unix_micros(CAST({0} AS TIMESTAMP)), 1000000)"
_ISO_THURSDAY = "date_add(CAST({0} AS DATE), 3 - weekday({0}))"  # its ISO year is the date's

# keyword -> (Spark SQL integer expression over {0}, zero-padded width); width 0: no padding
_NUMBERS: dict[str, tuple[str, int]] = {
    "YYYY": ("year({0})", 4), "YYY": ("year({0}) % 1000", 3), "YY": ("year({0}) % 100", 2), "Y": ("year({0}) % 10", 1),
    "IYYY": (f"year({_ISO_THURSDAY})", 4), "IYY": (f"year({_ISO_THURSDAY}) % 1000", 3),
    "IY": (f"year({_ISO_THURSDAY}) % 100", 2), "I": (f"year({_ISO_THURSDAY}) % 10", 1),
    "CC": ("(year({0}) + 99) DIV 100", 2), "Q": ("quarter({0})", 0), "MM": ("month({0})", 2),
    "WW": ("(dayofyear({0}) - 1) DIV 7 + 1", 2), "IW": ("weekofyear({0})", 2), "W": ("(day({0}) - 1) DIV 7 + 1", 0),
    "DDD": ("dayofyear({0})", 3), "DD": ("day({0})", 2), "D": ("dayofweek({0})", 0), "ID": ("weekday({0}) + 1", 0),
    "J": ("datediff(CAST({0} AS DATE), DATE'1970-01-01') + 2440588", 0),
    "HH": ("(hour({0}) + 11) % 12 + 1", 2), "HH12": ("(hour({0}) + 11) % 12 + 1", 2), "HH24": ("hour({0})", 2),
    "MI": ("minute({0})", 2), "SS": ("second({0})", 2), "MS": (f"{_MICROS} DIV 1000", 3), "US": (_MICROS, 6),
    "SSSS": ("hour({0}) * 3600 + minute({0}) * 60 + second({0})", 0),
    "SSSSS": ("hour({0}) * 3600 + minute({0}) * 60 + second({0})", 0),
    **{f"FF{n}": (f"{_MICROS} DIV {10 ** (6 - n)}", n) for n in range(1, 7)},
}
_FRACTIONS = ("MS", "US", *(f"FF{n}" for n in range(1, 7)))  # zero-padded even after FM
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII")
# keyword (in its written case) -> (names, Spark SQL 1-based index over {0}, padded width)
_NAMES: dict[str, tuple[tuple[str, ...], str, int]] = {}
for _word, _names, _index, _width in (("MONTH", _MONTHS, "month({0})", 9), ("MON", tuple(m[:3] for m in _MONTHS),
                                       "month({0})", 0), ("DAY", _DAYS, "dayofweek({0})", 9),
                                      ("DY", tuple(d[:3] for d in _DAYS), "dayofweek({0})", 0)):
    _NAMES[_word] = (tuple(n.upper() for n in _names), _index, _width)
    _NAMES[_word.capitalize()] = (_names, _index, _width)
    _NAMES[_word.lower()] = (tuple(n.lower() for n in _names), _index, _width)
_NAMES["RM"] = (_ROMAN, "month({0})", 4)
_NAMES["rm"] = (tuple(r.lower() for r in _ROMAN), "month({0})", 4)
# meridiem and era indicators, in their written case and punctuation
_MARKS = {"AM": ("AM", "PM"), "PM": ("AM", "PM"), "am": ("am", "pm"), "pm": ("am", "pm"),
          "A.M.": ("A.M.", "P.M."), "P.M.": ("A.M.", "P.M."), "a.m.": ("a.m.", "p.m."), "p.m.": ("a.m.", "p.m.")}
_ERAS = {"AD": "AD", "BC": "AD", "ad": "ad", "bc": "ad", "A.D.": "A.D.", "B.C.": "A.D.", "a.d.": "a.d.",
         "b.c.": "a.d."}
_THOUSANDS = ("Y,YYY", "y,yyy")  # the year with a comma before its last three digits
_UNSUPPORTED = ("TZH", "TZM", "TZ", "OF", "IDDD", "tzh", "tzm", "tz", "of", "iddd", "FX", "fx")

_KEYWORDS = sorted({*_NUMBERS, *(k.lower() for k in _NUMBERS), *_NAMES, *_MARKS, *_ERAS, *_THOUSANDS,
                    *_UNSUPPORTED},
                   key=len, reverse=True)
_LOWER_NUMBERS = {k.lower(): k for k in _NUMBERS}

Token = tuple[str, str, str] | str  # (keyword, prefix, suffix) or literal text (quoted text in its quotes)


def parse_template(template: str) -> list[Token]:
    """The template's patterns (keyword, ``FM``/``TM`` prefix, ``TH``/``th`` suffix) and literals."""
    out: list[Token] = []
    i, n = 0, len(template)
    while i < n:
        if template[i] == '"':
            j, text = i + 1, ""
            while j < n and template[j] != '"':
                if template[j] == "\\" and j + 1 < n:
                    j += 1
                text += template[j]
                j += 1
            out.append('"' + text + '"')
            i = j + 1
            continue
        if template.startswith('\\"', i):
            out.append('"')
            i += 2
            continue
        prefix = ""
        for p in ("FM", "fm", "TM", "tm"):
            if template.startswith(p, i) and _keyword_at(template, i + 2):
                prefix = p.upper()
                i += 2
                break
        word = _keyword_at(template, i)
        if word is None:
            out.append(template[i])
            i += 1
            continue
        i += len(word)
        suffix = ""
        for s in ("TH", "th", "SP", "sp"):
            if template.startswith(s, i):
                suffix = s
                i += 2
                break
        out.append((word, prefix, suffix))
    return out


def _keyword_at(template: str, i: int) -> str | None:
    return next((k for k in _KEYWORDS if template.startswith(k, i)), None)


def to_char_template(template: str) -> str:
    """A Spark SQL template over ``{0}`` (a timestamp) giving ``to_char({0}, template)``."""
    if template == "":
        return "CAST(NULL AS STRING)"  # PostgreSQL returns NULL for an empty template
    pieces = []
    for token in parse_template(template):
        if isinstance(token, str):
            text = token[1:-1] if token.startswith('"') and len(token) > 1 else token
            if text:
                pieces.append(_literal(text))
            continue
        pieces.append(_pattern(*token))
    body = f"concat({', '.join(pieces)})" if pieces else "''"
    return f"IF({{0}} IS NULL, NULL, {body})"


def _literal(text: str) -> str:
    return spark_string(text).replace("{", "{{").replace("}", "}}")


def _pattern(word: str, prefix: str, suffix: str) -> str:
    if suffix in ("SP", "sp") or word in _UNSUPPORTED:
        raise FeatureNotSupported(f'to_char pattern "{prefix}{word}{suffix}" is not supported in a materialized '
                                  f"view yet")
    fill = prefix == "FM"
    if word in _THOUSANDS and not suffix:
        return "format_string('%d,%03d', year({0}) DIV 1000, year({0}) % 1000)"
    key = _LOWER_NUMBERS.get(word, word)
    if key in _NUMBERS:
        expr, width = _NUMBERS[key]
        pad = width and (not fill or key in _FRACTIONS)
        text = f"format_string('%{'0' + str(width) if pad else ''}d', {expr})"
        if suffix:
            text = f"concat({text}, {_ordinal(expr, suffix == 'TH')})"
        return text
    if suffix:
        raise FeatureNotSupported(f'to_char pattern "{word}{suffix}" is not supported: TH applies to numbers')
    if word in _NAMES:
        names, index, width = _NAMES[word]
        array = "array(" + ", ".join(spark_string(name) for name in names) + ")"
        text = f"element_at({array}, {index})"
        return f"rpad({text}, {width}, ' ')" if width and not prefix else text
    if word in _MARKS:
        am, pm = _MARKS[word]
        return f"IF(hour({{0}}) < 12, {spark_string(am)}, {spark_string(pm)})"
    return spark_string(_ERAS[word])  # years before 1 AD do not occur in Spark's timestamps


def _ordinal(number: str, upper: bool) -> str:
    """PostgreSQL's ``get_th``: 11th-19th, then 1st, 2nd, 3rd, else th."""
    th, st, nd, rd = ("TH", "ST", "ND", "RD") if upper else ("th", "st", "nd", "rd")
    n = f"({number})"
    return (f"CASE WHEN {n} % 100 BETWEEN 10 AND 19 THEN '{th}' WHEN {n} % 10 = 1 THEN '{st}' "
            f"WHEN {n} % 10 = 2 THEN '{nd}' WHEN {n} % 10 = 3 THEN '{rd}' ELSE '{th}' END")
