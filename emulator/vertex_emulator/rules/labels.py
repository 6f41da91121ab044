"""Rules on a job's display name and labels.

* ``display-name``: the v1 ``CustomJob.display_name`` / ``HyperparameterTuningJob.display_name``
  comment: "The name can be up to 128 characters long and can consist of any UTF-8 characters."
  (So a name of spaces is a name; an empty one is "Required", see ``required``.)
* ``label-length``, ``label-chars``: the v1 ``labels`` comment: "Label keys and values can be no longer
  than 64 characters (Unicode codepoints), can only contain lowercase letters, numeric characters,
  underscores and dashes. International characters are allowed." The Resource Manager labels page it
  links to says 63; where the Google pages and the protos disagree the protos win, so 64 is accepted.
* ``labels-count``, ``label-key-start``: that labels page (https://goo.gl/xmQnxf, "Create and manage
  labels"): "Each resource can have up to 64 labels", "Keys have a minimum length of 1 character",
  "Keys must start with a lowercase letter or international character".

"Lowercase letters" and "international characters" read as Unicode: a letter of category ``Ll``
(lowercase) or ``Lo`` (a letter without case, as in most non-Latin scripts); a "numeric character" is
one of category ``N*``. Uppercase and titlecase letters are refused.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from vertex_emulator.rules._common import problem

__all__ = ["MAX_DISPLAY_NAME", "MAX_LABELS", "MAX_LABEL_LENGTH", "display_name_problems", "label_problems"]

MAX_DISPLAY_NAME = 128
MAX_LABELS = 64
MAX_LABEL_LENGTH = 64

_LETTERS = frozenset({"Ll", "Lo"})
_NUMBERS = frozenset({"Nd", "Nl", "No"})


def _letter(ch: str) -> bool:
    return unicodedata.category(ch) in _LETTERS


def _allowed(ch: str) -> bool:
    return ch in "_-" or unicodedata.category(ch) in _LETTERS | _NUMBERS


def display_name_problems(name: str, path: str) -> list[str]:
    if len(name) > MAX_DISPLAY_NAME:
        return [problem(path, f"must be at most {MAX_DISPLAY_NAME} characters (got {len(name)})")]
    return []


def label_problems(labels: Mapping[str, str], path: str) -> list[str]:
    """The problems of a ``labels`` map (its count, then each key and value)."""
    out: list[str] = []
    if len(labels) > MAX_LABELS:
        out.append(problem(path, f"at most {MAX_LABELS} labels are allowed (got {len(labels)})"))
    for key in sorted(labels):
        value = labels[key]
        if not key:
            out.append(problem(path, "a label key must not be empty"))
            continue
        if len(key) > MAX_LABEL_LENGTH:
            out.append(problem(path, f"label key {key!r} must be at most {MAX_LABEL_LENGTH} characters"))
        if not _letter(key[0]):
            out.append(problem(path, f"label key {key!r} must start with a lowercase letter"))
        bad = "".join(dict.fromkeys(ch for ch in key if not _allowed(ch)))
        if bad:
            out.append(
                problem(
                    path,
                    f"label key {key!r} may contain only lowercase letters, numeric characters, "
                    f"underscores and dashes (got {bad!r})",
                )
            )
        if len(value) > MAX_LABEL_LENGTH:
            out.append(problem(f"{path}.{key}", f"label value must be at most {MAX_LABEL_LENGTH} characters"))
        bad = "".join(dict.fromkeys(ch for ch in value if not _allowed(ch)))
        if bad:
            out.append(
                problem(
                    f"{path}.{key}",
                    f"label value {value!r} may contain only lowercase letters, numeric characters, "
                    f"underscores and dashes (got {bad!r})",
                )
            )
    return out
