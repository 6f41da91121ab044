"""What the emulator's two filter languages share: both are of Google's AIP-160 family (the JobService
List ``filter``, google.aip.dev/160, and Cloud Logging's query language, a superset of it), and both read
their text with the same cursor (``scan``): spaces skipped, strings quoted with ``"`` or ``'`` (a
backslash escapes the next character), bare words up to a stop character, comparison operators matched
longest first, every error naming the position and the rule.

What differs between the two is kept explicit in a ``Lexicon`` per language (which characters are
spaces, whether ``--`` starts a comment, which operators exist, which error class is raised) and in each
service's own parser, field table and evaluator (``jobservice/filters.py``, ``cloud_logging/query*.py``).

The parsers are not shared yet. What one shared parser would have to take as options, to keep every
error as it is: the List filter tokenizes the whole text before parsing (a late token error wins over an
earlier parse error) while Logging reads as it parses; the List filter counts restrictions after
tokenizing, Logging while parsing (merged ``OR`` equalities once); the depth errors differ ("deeper than
32 levels" at the ``(``, and an empty ``()`` refused, against "more than 64 nested parentheses"); the
List filter continues a sequence only on ``(``, ``NOT``, ``-`` or a field, Logging on anything but the
end or ``)``; the List filter allows one ``NOT``/``-``, Logging repeated negations.
"""

from __future__ import annotations

from vertex_emulator.core.filtering.scan import Cursor, FilterSyntaxError, Lexicon

__all__ = ["Cursor", "FilterSyntaxError", "Lexicon"]
