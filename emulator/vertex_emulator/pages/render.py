"""The pages' Jinja2 environment: the templates under ``templates/`` beside this module, autoescaped
(every ``.html`` template: a value from a job, a request or a log is always escaped; only markup a
template itself renders, the trial chart, is passed on as ``Markup``), built on the first page served.

A template is written as indented lines; its lines are joined when it is loaded (each line's leading
whitespace and its line break left out), so a page is one line of HTML, as the pages always were. A
tag, an expression or a statement therefore stays on one line, and text never begins a line with a
space it needs.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2.ext import Extension

__all__ = ["TEMPLATES", "environment", "render"]

#: the templates' directory, inside the package (the wheel holds it: hatchling packs the whole folder)
TEMPLATES = Path(__file__).parent / "templates"


class _JoinLines(Extension):
    """Joins a template's lines, each without its indentation, before Jinja reads it."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return "".join(line.lstrip() for line in source.splitlines())


@cache
def environment() -> jinja2.Environment:
    """The environment, made once: autoescaping for ``.html`` templates, an undefined variable an
    error (never an empty string), templates read once (they do not change while the emulator runs)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        extensions=[_JoinLines],
        auto_reload=False,
    )


def render(template: str, **context: Any) -> str:
    """Template ``template`` (a name under ``templates/``) rendered with ``context``."""
    return environment().get_template(template).render(context)
