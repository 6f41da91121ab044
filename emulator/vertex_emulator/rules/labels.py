"""Rules on a job's display name and labels.

* ``display-name``: the v1 ``CustomJob.display_name`` / ``HyperparameterTuningJob.display_name``
  comment: "The name can be up to 128 characters long and can consist of any UTF-8 characters."
  (So a name of spaces is a name; an empty one is "Required", see ``required``.)
* ``labels-count``, ``label-length``, ``label-bytes``, ``label-chars``, ``label-key-start``: the
  service's own answer to a bad label, as quoted in a user report (statmike/vertex-ai-mlops issue 6,
  https://github.com/statmike/vertex-ai-mlops/issues/6, read 2026-12-06): "There can be no more than
  64 labels attached to a single resource. Label keys and values can only contain lowercase letters,
  numbers, dashes and underscores. Label keys must start with a letter or number, must be less than
  64 characters in length, and must be less that 128 bytes in length when encoded in UTF-8. Label
  values must be less than 64 characters in length, and must be less that 128 bytes in length when
  encoded in UTF-8." So keys and values are at most 63 code points and 127 UTF-8 bytes.

Where the sources disagree, the service's text wins: the v1 ``labels`` comment says "no longer than
64 characters (Unicode codepoints)" and the labels page it links to (https://goo.gl/xmQnxf, "Create
and manage labels", read 2026-12-06) says keys "must start with a lowercase letter or international
character", while the service says "start with a letter or number" (so ``9lives`` is a key). The
comment and the page both say "International characters are allowed", which the service's byte limit
presupposes (63 ASCII characters never reach 128 bytes).

"Lowercase letters" and "international characters" read as Unicode: a letter of category ``Ll``
(lowercase) or ``Lo`` (a letter without case, as in most non-Latin scripts); a "number" is one of
category ``N*``. Uppercase and titlecase letters are refused.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from vertex_emulator.rules._common import problem

__all__ = [
    "MAX_DISPLAY_NAME",
    "MAX_LABELS",
    "MAX_LABEL_BYTES",
    "MAX_LABEL_LENGTH",
    "display_name_problems",
    "label_problems",
]

MAX_DISPLAY_NAME = 128
MAX_LABELS = 64
#: "less than 64 characters in length"
MAX_LABEL_LENGTH = 63
#: "less that 128 bytes in length when encoded in UTF-8"
MAX_LABEL_BYTES = 127

_LETTERS = frozenset({"Ll", "Lo"})
_NUMBERS = frozenset({"Nd", "Nl", "No"})


def _starts_key(ch: str) -> bool:
    return unicodedata.category(ch) in _LETTERS | _NUMBERS


def _allowed(ch: str) -> bool:
    return ch in "_-" or unicodedata.category(ch) in _LETTERS | _NUMBERS


def display_name_problems(name: str, path: str) -> list[str]:
    if len(name) > MAX_DISPLAY_NAME:
        return [problem(path, f"must be at most {MAX_DISPLAY_NAME} characters (got {len(name)})")]
    return []


def _size_problem(what: str, text: str) -> str | None:
    """Why ``text`` (a key or a value) is too long, or ``None``."""
    if len(text) > MAX_LABEL_LENGTH:
        return f"{what} must be less than 64 characters in length (got {len(text)})"
    size = len(text.encode("utf-8"))
    if size > MAX_LABEL_BYTES:
        return f"{what} must be less than 128 bytes in length when encoded in UTF-8 (got {size})"
    return None


def _chars_problem(what: str, text: str) -> str | None:
    bad = "".join(dict.fromkeys(ch for ch in text if not _allowed(ch)))
    if not bad:
        return None
    return f"{what} may contain only lowercase letters, numbers, dashes and underscores (got {bad!r})"


def _key_problems(key: str, path: str) -> list[str]:
    if not key:
        return [problem(path, "a label key must not be empty")]
    what = f"label key {key!r}"
    found = [_size_problem(what, key)]
    if not _starts_key(key[0]):
        found.append(f"{what} must start with a letter or number")
    found.append(_chars_problem(what, key))
    return [problem(path, text) for text in found if text is not None]


def label_problems(labels: Mapping[str, str], path: str) -> list[str]:
    """The problems of a ``labels`` map (its count, then each key and value)."""
    out: list[str] = []
    if len(labels) > MAX_LABELS:
        out.append(problem(path, f"there can be no more than {MAX_LABELS} labels (got {len(labels)})"))
    for key in sorted(labels):
        out.extend(_key_problems(key, path))
        if not key:
            continue
        value = labels[key]
        for text in (_size_problem("label value", value), _chars_problem(f"label value {value!r}", value)):
            if text is not None:
                out.append(problem(f"{path}.{key}", text))
    return out
