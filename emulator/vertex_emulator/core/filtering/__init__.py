"""What the emulator's two filter languages share: both are of Google's AIP-160 family (the JobService
List ``filter``, google.aip.dev/160, and Cloud Logging's query language, a superset of it), and both read
their text with the same cursor (``scan``): spaces skipped, strings quoted with ``"`` or ``'`` (a
backslash escapes the next character), bare words up to a stop character, comparison operators matched
longest first, every error naming the position and the rule.

Both are parsed by one parser (``parse``) into a small tree (``And``, ``Or``, ``Not`` and ``Leaf``
nodes, each leaf a ``Restriction``: field, operator, value) that each service evaluates with ``fold``.
What differs between the two is explicit: in a ``Lexicon`` per language (which characters are spaces,
whether ``--`` starts a comment, which operators exist, which error class is raised), in a token
``Source`` per language and in a ``Grammar`` per language, whose options keep every error as it was:

* the List filter tokenizes the whole text before parsing (its source is a ``TokenList``: a late token
  error wins over an earlier parse error, and its restrictions are counted then), Logging reads as it
  parses (``cloud_logging/query_scan.py``'s ``LogSource``) and counts its terms as they are read, the
  ``=`` values of one text field joined by ``OR`` once (``Grammar.counts``);
* the depth limit and its words (``max_depth``, ``too_deep``: "deeper than 32 levels" against "more
  than 64 nested parentheses", both at the ``(``) and whether an empty ``()`` is refused as such
  (``empty_parens_rule``);
* which tokens continue a sequence (``continues``: the List filter's ``(``, ``NOT``, ``-`` or a field,
  Logging's anything but the end or ``)``), one or repeated negations (``repeated_negation``), value
  groups (``value_groups``), the rule of a field and operator checked before the value (``field_rule``)
  and the words of an error where a term should be (``unexpected``).

Each service keeps its field table and evaluator: the ``Grammar.leaf`` that judges one restriction as
it is read (``jobservice/filters.py``: display_name, state, create_time, labels; ``cloud_logging/
query.py`` and ``query_terms.py``: severity, times, logName, labels, payloads, search terms,
``log_id()``) and what the tree folds into (a predicate over a stored job, a ``LogQuery``).
"""

from __future__ import annotations

from vertex_emulator.core.filtering.parse import (
    And,
    Grammar,
    Leaf,
    Node,
    Not,
    Or,
    Restriction,
    Source,
    Token,
    TokenList,
    fold,
    parse,
)
from vertex_emulator.core.filtering.scan import Cursor, FilterSyntaxError, Lexicon

__all__ = [
    "And",
    "Cursor",
    "FilterSyntaxError",
    "Grammar",
    "Leaf",
    "Lexicon",
    "Node",
    "Not",
    "Or",
    "Restriction",
    "Source",
    "Token",
    "TokenList",
    "fold",
    "parse",
]
