"""The patterns the request is scanned with for values of a shape: quoted text, bracketed JSON, e-mail
addresses, URLs and host names, phone numbers, numbers, codes, file names, "lat,lng" pairs, arithmetic
expressions and words.

They find where a value is written (planner/values.py claims each span once, in a fixed order); what a
value found by any rule looks like, and which argument kinds it may fill, is planner/value_shapes.py.
"""

from __future__ import annotations

import re

# quoted text, in any of the marks requests use (《》: a title in Chinese)
QUOTED = re.compile(r"(?<![A-Za-z0-9_])(['\"“‘「『《])(.{1,120}?)(['\"”’」』》])(?![A-Za-z0-9_])")
BRACKETS = re.compile(r"\[[^\[\]]{1,400}\]|\{[^{}]{1,400}\}")
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
URL = re.compile(r"\b(?:https?://|www\.)[^\s'\"<>]+[^\s'\".,;:!?<>)]")
# a host name; a label may open with "_" (RFC 8552 attribute leaves: `_acme-challenge.example.org`, `_dmarc.…`)
HOST = re.compile(r"(?<![\w@.-])(?:_?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w@-]|\.\w)")
PHONE = re.compile(r"(?<![\w-])\+?\d[\d\s().-]{5,}\d(?![\w-])")
NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.])(-)?([$€£¥])?\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?(%|percent\b|k\b|thousand\b|million\b)?"
)
# a code: letters and digits in parts joined by "-", "_" or ":" ("ORD-7781", "d:bio-10", "urn:isbn:0451"), or
# words a colon joins into one name space ("env:staging", "team:payments": a tag or label as written); an id
# may join its parts with several dashes and underscores in a row (YouTube's base64url `Ks-_Mh1QhMc`)
CODE = re.compile(
    r"(?<![\w:-])(?=[\w:-]*\d)(?=[\w:-]*[A-Za-z])[A-Za-z0-9]+(?:(?:[-_]+|:)[A-Za-z0-9]+)*(?![\w-]|:\w)"
    r"|\b[A-Z]{2,}-[A-Z0-9]+\b"
    r"|(?<![\w:-])[A-Za-z][A-Za-z0-9_-]*(?::[A-Za-z][A-Za-z0-9_-]*)+(?![\w-]|:\w)"
)
# a file's name by its extension ("Q3 report.pdf" is quoted when it has spaces)
_EXTENSIONS = (
    "pdf|docx?|xlsx?|pptx?|odt|ods|csv|tsv|txt|md|rtf|json|xml|ya?ml|zip|tar|gz|tgz|7z|rar"
    "|png|jpe?g|gif|svg|webp|mp3|wav|mp4|mov|avi"
)
FILENAME = re.compile(rf"(?<![\w@./-])[\w-]+(?:\.[\w-]+)*\.(?:{_EXTENSIONS})(?![\w.-])", re.IGNORECASE)
# a "lat,lng" pair, bounded by what is not an ASCII letter or digit (\w would refuse "从31.2304,121.4737到")
COORDINATES = re.compile(r"(?<![A-Za-z0-9_.])(-?\d{1,2}\.\d{2,})\s*,\s*(-?\d{1,3}\.\d{2,})(?![A-Za-z0-9_]|\.\d)")
# arithmetic ("(3+4)*2", "24-04"), never the digits inside a hyphenated slug ("ubuntu-24-04-x64", a code)
EXPRESSION = re.compile(
    r"(?<![\w.])(?<!\w-)\(?-?\d+(?:\.\d+)?\)?(?:\s*[-+*/^%<>=]\s*\(?-?\d+(?:\.\d+)?\)?)+(?![\w.])(?!-\w)"
)
WORD = re.compile(r"[A-Za-z][A-Za-z0-9'&-]*|\d+(?:[.,:]\d+)*")
