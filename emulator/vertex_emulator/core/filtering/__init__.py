"""What the emulator's two filter languages share: both are of Google's AIP-160 family (the JobService
List ``filter``, google.aip.dev/160, and Cloud Logging's query language, a superset of it), and both read
their text with the same cursor (``scan``): spaces skipped, strings quoted with ``"`` or ``'`` (a
backslash escapes the next character), bare words up to a stop character, comparison operators matched
longest first, every error naming the position and the rule.

What differs between the two is kept explicit in a ``Lexicon`` per language (which characters are
spaces, whether ``--`` starts a comment, which operators exist, which error class is raised) and in each
service's own parser, field table and evaluator (``jobservice/filters.py``, ``cloud_logging/query*.py``).
"""

from __future__ import annotations

from vertex_emulator.core.filtering.scan import Cursor, FilterSyntaxError, Lexicon

__all__ = ["Cursor", "FilterSyntaxError", "Lexicon"]
