"""`frontend.pg_format`: to_char templates read as PostgreSQL reads them (case-exact keywords, FM/TM
prefixes, TH suffixes, quoted text). The values are compared with PostgreSQL by
tests/e2e/test_datetime_functions.py."""

from __future__ import annotations

import pytest

from frontend.pg_format import parse_template, to_char_template
from risingspark.errors import FeatureNotSupported


@pytest.mark.parametrize(("template", "tokens"), [
    ("YYYY-MM-DD", [("YYYY", "", ""), "-", ("MM", "", ""), "-", ("DD", "", "")]),
    # lowercase mm is the month (PostgreSQL: to_char(ts, 'HH:mm') = '01:01' at 13:05 on Jan 31)
    ("HH:mm", [("HH", "", ""), ":", ("mm", "", "")]),
    ("HH24:MI", [("HH24", "", ""), ":", ("MI", "", "")]),
    # mixed case is not a keyword: M, then I (the ISO year's last digit)
    ("mI", ["m", ("I", "", "")]),
    # unknown letters are copied, y is the year's last digit
    ("xyz", ["x", ("y", "", ""), "z"]),
    ("FMDDth", [("DD", "FM", "th")]),
    ('"YYYY" \\"', ['"YYYY"', " ", '"']),
    ("Month month MONTH Mon", [("Month", "", ""), " ", ("month", "", ""), " ", ("MONTH", "", ""), " ",
                               ("Mon", "", "")]),
    ("TMDay", [("Day", "TM", "")]),
    ("Y,YYY", [("Y,YYY", "", "")]),
])
def test_parse_as_postgres(template: str, tokens: list) -> None:
    assert parse_template(template) == tokens


def test_rendering() -> None:
    assert to_char_template("") == "CAST(NULL AS STRING)"
    assert to_char_template("xz") == "IF({0} IS NULL, NULL, concat('x', 'z'))"
    assert to_char_template("abc") == "IF({0} IS NULL, NULL, concat('a', 'ad'))"  # bc: the era, as PostgreSQL
    assert "rpad(element_at(array('January'," in to_char_template("Month")
    assert "rpad(" not in to_char_template("FMMonth")
    assert "format_string('%d', day({0}))" in to_char_template("FMDD")
    assert "format_string('%06d', " in to_char_template("FMUS")  # fractions keep their zeros
    assert "{{x}}" in to_char_template('"{x}"')  # braces are escaped for the template's format()


@pytest.mark.parametrize("template", ["TZ", "OF", "IDDD", "DDSP", "MonthTH"])
def test_unsupported_patterns_name_themselves(template: str) -> None:
    with pytest.raises(FeatureNotSupported, match="to_char pattern"):
        to_char_template(template)
