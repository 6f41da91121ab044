"""The Vertex AI label rules: the one place that decides whether a label key or value is valid.

Pure (standard library only) and neutral: the specs (the bottom layer) and the hooks both import it,
so a spec's ``labels`` and the labels a hook sends are judged by the same rule.

The rule is the service's own answer to a bad label, as quoted in a user report
(https://github.com/statmike/vertex-ai-mlops/issues/6, read 2026-12-06): "There can be no more than
64 labels attached to a single resource. Label keys and values can only contain lowercase letters,
numbers, dashes and underscores. Label keys must start with a letter or number, must be less than 64
characters in length, and must be less that 128 bytes in length when encoded in UTF-8. Label values
must be less than 64 characters in length, and must be less that 128 bytes in length when encoded in
UTF-8." Where Google's texts disagree it wins: the v1 protos' ``labels`` comment says "no longer than
64 characters (Unicode codepoints)" and the Google Cloud labels page says keys start "with a lowercase
letter or international character"; both say "International characters are allowed".

* a *letter* is a character of Unicode category ``Ll`` (lowercase letter: ``a``, ``é``, ``ß``) or
  ``Lo`` (a letter without case: ``日``, ``ا``); an uppercase or titlecase letter is not;
* a *number* is a character of a Unicode ``N`` category (``0``-``9``, ``٣``, ...);
* keys: 1-63 characters and at most 127 bytes in UTF-8, the first a letter or a number, the rest
  letters, numbers, ``_`` or ``-``;
* values: 0-63 characters and at most 127 bytes in UTF-8 of letters, numbers, ``_`` or ``-``;
* at most 64 labels.

The labels the provider writes itself (``airflow_vertex_dist.hooks.labels``: hashed run ids, sanitized
names) keep to the same limits (``MAX_LABEL_LENGTH``, ``MAX_LABEL_BYTES``) and start with a letter.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

__all__ = [
    "LABEL_LENGTH_LIMIT",
    "MAX_LABELS",
    "MAX_LABEL_BYTES",
    "MAX_LABEL_LENGTH",
    "is_label_char",
    "is_label_key_start",
    "is_label_letter",
    "label_error",
    "labels_error",
]

MAX_LABELS = 64
#: The longest valid label key or value, in code points (the service: "less than 64 characters").
LABEL_LENGTH_LIMIT = 63
#: The longest label key or value the provider writes itself: the same limit.
MAX_LABEL_LENGTH = LABEL_LENGTH_LIMIT
#: The longest valid label key or value in UTF-8 (the service: "less that 128 bytes").
MAX_LABEL_BYTES = 127

_LETTER_CATEGORIES = frozenset({"Ll", "Lo"})
_NUMBER_CATEGORIES = frozenset({"Nd", "Nl", "No"})


def is_label_letter(ch: str) -> bool:
    """A lowercase (``Ll``) or caseless (``Lo``) letter."""
    return unicodedata.category(ch) in _LETTER_CATEGORIES


def is_label_key_start(ch: str) -> bool:
    """A letter (``is_label_letter``) or a number: what a label key may start with (the service's
    "Label keys must start with a letter or number")."""
    return unicodedata.category(ch) in _LETTER_CATEGORIES | _NUMBER_CATEGORIES


def is_label_char(ch: str) -> bool:
    """A character a label key or value may contain: a letter, a number, ``_`` or ``-``."""
    return ch in "_-" or unicodedata.category(ch) in _LETTER_CATEGORIES | _NUMBER_CATEGORIES


#: Text of lowercase ASCII letters, digits, ``_`` and ``-`` only: valid throughout, no character to
#: look up (the labels the provider writes, and most others, are such text).
_ASCII_LABEL_TEXT = re.compile(r"[a-z0-9_\-]*")


def _bad_chars(text: str) -> str:
    if _ASCII_LABEL_TEXT.fullmatch(text):
        return ""
    return "".join(dict.fromkeys(ch for ch in text if not is_label_char(ch)))


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def label_error(field: str, key: object, value: object) -> str | None:
    """Why the label ``key: value`` of ``field`` breaks the rule, or ``None``.

    The message names the field and the rule: ``"<field>: label key ..."`` for a bad key,
    ``"<field>.<key>: label value ..."`` for a bad value.
    """
    if not isinstance(key, str) or not key or len(key) > LABEL_LENGTH_LIMIT:
        return (
            f"{field}: label key {key!r} must be 1-{LABEL_LENGTH_LIMIT} characters (less than 64); shorten it"
        )
    if _utf8_size(key) > MAX_LABEL_BYTES:
        return (
            f"{field}: label key {key!r} must be less than 128 bytes in UTF-8 (got {_utf8_size(key)}); "
            "shorten it"
        )
    if not is_label_key_start(key[0]):
        return f"{field}: label key {key!r} must start with a lowercase letter or a number; rename it"
    bad = _bad_chars(key)
    if bad:
        return (
            f"{field}: label key {key!r} may contain only lowercase letters, numbers, '_' and '-' "
            f"(got {bad!r}); rename it"
        )
    if not isinstance(value, str):
        return f"{field}.{key}: label value must be a string (got {type(value).__name__}); quote it"
    if len(value) > LABEL_LENGTH_LIMIT:
        return (
            f"{field}.{key}: label value must be at most {LABEL_LENGTH_LIMIT} characters (less than 64; "
            f"got {len(value)}); shorten it"
        )
    if _utf8_size(value) > MAX_LABEL_BYTES:
        return (
            f"{field}.{key}: label value must be less than 128 bytes in UTF-8 (got {_utf8_size(value)}); "
            "shorten it"
        )
    bad = _bad_chars(value)
    if bad:
        return (
            f"{field}.{key}: label value {value!r} may contain only lowercase letters, numbers, '_' "
            f"and '-' (got {bad!r}); lowercase it and replace the rest with '-'"
        )
    return None


def labels_error(field: str, labels: Mapping[str, str] | Mapping[object, object]) -> str | None:
    """Why ``labels`` break the rule (their number, or the first label that does), or ``None``."""
    if len(labels) > MAX_LABELS:
        return f"{field}: at most {MAX_LABELS} labels are allowed (got {len(labels)}); drop some"
    for key, value in labels.items():
        error = label_error(field, key, value)
        if error is not None:
            return error
    return None
