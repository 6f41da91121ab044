"""MkDocs hooks of this site (configured under ``hooks:`` in ``mkdocs.yml``).

The code's docstrings use Sphinx roles (``:class:`~pkg.mod.Name```); mkdocstrings renders the
backticked part as code and leaves the role name in front of it. This turns
``:class:<code>~pkg.mod.Name</code>`` into ``<code>Name</code>`` (``~`` keeps the last part, as in
Sphinx) so the API reference reads cleanly.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):<code>(~?)([^<]*)</code>")


def _short(match: re.Match[str]) -> str:
    tilde, target = match.group(1), match.group(2)
    return f"<code>{target.rsplit('.', 1)[-1] if tilde else target}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    return _ROLE.sub(_short, html)
