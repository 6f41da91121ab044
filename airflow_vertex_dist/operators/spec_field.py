"""A job spec held in a templated operator field: coercion, Jinja detection, re-validation.

The field holds a spec's JSON dict (a spec model given to the operator is dumped to it), or a
template rendering to a JSON/YAML string, e.g. ``"{{ var.value.my_spec }}"``. Jinja in its string
values is rendered by Airflow like any templated dict; the result is then validated again, and a bad
rendered value fails with its field path: ``spec.primary.container.args[1]: ...``. A dict with Jinja
has its keys checked when the task is built (``check_keys``), its values after rendering. A spec
model holding Jinja was checked when it was built, except the rules of its templated fields (label
values, display names, the output directory...: ``specs._base.defers_jinja``); the rendered spec is
validated with every rule (``coerce_spec(..., rendered=True)``). An unknown field is named with the
closest valid one: ``spec.primery: unknown field (did you mean primary?)``. A Jinja syntax error
fails when the task is built, with the string's path and line (``check_template_syntax``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from airflow_vertex_dist.specs._base import JINJA_MARKERS, RENDERED_CONTEXT
from airflow_vertex_dist.specs._fields import items_of, models_in
from airflow_vertex_dist.specs.errors import error_text, unknown_field_rule
from airflow_vertex_dist.specs.loading import DuplicateKeyError, parse_spec_document

__all__ = [
    "LOGICAL_DATE_KEYS",
    "NO_LOGICAL_DATE_ADVICE",
    "SpecError",
    "check_keys",
    "check_template_syntax",
    "coerce_spec",
    "has_jinja",
    "render_spec",
    "spec_error",
    "spec_to_field",
    "template_strings",
    "unknown_field_rule",
]

M = TypeVar("M", bound=BaseModel)


class SpecError(ValueError):
    """A spec that does not validate; the message lists ``<path>: <rule>`` lines."""


def has_jinja(value: Any) -> bool:
    """Whether a string anywhere in ``value`` (dicts, lists, models) holds a Jinja marker."""
    if isinstance(value, str):
        return any(marker in value for marker in JINJA_MARKERS)
    if isinstance(value, BaseModel):
        return has_jinja(value.model_dump(mode="json"))
    if isinstance(value, Mapping):
        return any(has_jinja(k) or has_jinja(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return any(has_jinja(v) for v in value)
    return False


def check_keys(value: Mapping[str, Any], model: type[BaseModel], *, root: str = "spec") -> None:
    """Check the keys (not the values) of a spec dict against ``model``: what can be checked while
    its values still hold Jinja. ``SpecError`` lists every unknown key with its path."""
    lines: list[str] = []

    def walk(data: Any, annotation: Any, path: str) -> None:
        if isinstance(data, Mapping):
            models = models_in(annotation)
            if not models:
                return  # a plain dict field (labels, env...): any key goes
            known: list[str] = []
            for m in models:
                known += [n for n in m.model_fields if n not in known]
            for key, item in data.items():
                where = f"{path}.{key}"
                if key not in known:
                    lines.append(f"{where}: {unknown_field_rule(str(key), known)}")
                    continue
                field = next(m.model_fields[key] for m in models if key in m.model_fields)
                walk(item, field.annotation, where)
        elif isinstance(data, list | tuple):
            item_annotation = items_of(annotation)
            if item_annotation is not None:
                for index, item in enumerate(data):
                    walk(item, item_annotation, f"{path}[{index}]")

    walk(value, model, root)
    if lines:
        raise SpecError("\n".join([f"invalid {model.__name__} spec:", *("  " + line for line in lines)]))


def spec_error(
    exc: ValidationError, *, root: str = "spec", when: str = "", model: type[BaseModel] | None = None
) -> SpecError:
    """One line per error: ``spec.primary.replica_count: <rule> (got <value>)``; an unknown field
    names the closest valid one of ``model`` (``airflow_vertex_dist.specs.errors.error_text``)."""
    return SpecError(error_text(exc, root=root, when=when, model=model))


def _parse_document(text: str | bytes, when: str) -> Any:
    """``parse_spec_document`` (JSON as JSON, anything else as YAML, a key given twice refused); every
    failure is a ``SpecError``."""
    import yaml

    try:
        return parse_spec_document(text, "spec")
    except DuplicateKeyError as exc:
        raise SpecError(f"{exc}{when}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"spec: not a JSON or YAML document{when}: {exc}") from exc
    except RecursionError:
        raise SpecError(f"spec: the document{when} is nested too deeply") from None


def coerce_spec(value: Any, model: type[M], *, when: str = "", rendered: bool = False) -> M:
    """Validate ``value`` (a model, a dict, or a JSON/YAML document string) into ``model``.

    A spec model's string fields that hold Jinja (labels, display names, the output directory...)
    wait for rendering to be judged; ``rendered=True`` (the operator's rendered spec) judges them all.
    """
    if isinstance(value, model):
        if not rendered:
            return value
        value = value.model_dump(mode="json")  # judged again, its deferred fields included
    if isinstance(value, BaseModel):
        raise SpecError(f"spec: expected a {model.__name__} or a dict, got a {type(value).__name__}")
    if isinstance(value, str | bytes):
        value = _parse_document(value, when)
    if not isinstance(value, Mapping):
        raise SpecError(f"spec: expected a {model.__name__} or a dict{when}, got {type(value).__name__}")
    try:
        return model.model_validate(dict(value), context=RENDERED_CONTEXT if rendered else None)
    except ValidationError as exc:
        raise spec_error(exc, when=when, model=model) from None


def spec_to_field(value: Any, model: type[BaseModel]) -> Any:
    """What the templated field holds: a model becomes its JSON dict (rendered, shown in the UI as
    JSON, validated again into ``model``); a dict or a document string stays as it is."""
    if isinstance(value, model):
        return value.model_dump(mode="json")
    return value


#: The context keys a run without a logical date lacks (Airflow 3 sets them only with a logical date).
LOGICAL_DATE_KEYS = frozenset(
    {
        "logical_date",
        "ds",
        "ds_nodash",
        "ts",
        "ts_nodash",
        "ts_nodash_with_tz",
        "data_interval_start",
        "data_interval_end",
        "prev_data_interval_start_success",
        "prev_data_interval_end_success",
    }
)
_UNDEFINED_NAME = re.compile(r"^'([A-Za-z_][A-Za-z0-9_]*)' is undefined$")
#: What to do about a template that needs a logical date in a run without one (said at run time by
#: ``render_spec``, and beforehand by ``airflow-vertex-dist render``).
NO_LOGICAL_DATE_ADVICE = (
    "trigger it with a logical date, or use {{ dag_run.run_after | ds_nodash }} or {{ run_id }}"
)
_NO_LOGICAL_DATE = (
    ": this run has no logical date (a manual run triggered without one), so ds, ds_nodash, ts, "
    "logical_date and data_interval_start/end are not set; " + NO_LOGICAL_DATE_ADVICE
)


def _render_failure(path: str, template: str, exc: Exception, has_logical_date: bool) -> str:
    message = str(exc).strip() or type(exc).__name__
    if type(exc).__name__ != "UndefinedError":
        message = f"{type(exc).__name__}: {message}"
    line = f"{path}: {template!r}: {message}"
    undefined = _UNDEFINED_NAME.match(message)
    if not has_logical_date and undefined and undefined.group(1) in LOGICAL_DATE_KEYS:
        line += _NO_LOGICAL_DATE
    return line


def check_template_syntax(value: Any, env: Any, *, field: str = "spec", task_id: str = "?") -> None:
    """Compile (parse, never render) every template string of the spec field ``value`` with ``env``
    (the task's Jinja environment: the DAG's delimiters and extensions), when the task is built: a Jinja
    syntax error then fails the DAG file's import, not the run. ``SpecError`` names the operator's field,
    the string's path in the spec and the line of the error. A spec given as a string is parsed as one
    template (its lines are the document's; the line of the error is quoted). Names, filters and
    macros are judged when it renders."""
    from jinja2 import TemplateSyntaxError

    for path, item in template_strings(value, field):
        try:
            env.parse(item)
        except TemplateSyntaxError as exc:
            lines = item.splitlines()
            if len(lines) > 1 and 0 < (exc.lineno or 0) <= len(lines):
                item = lines[exc.lineno - 1]  # of a document, the line of the error
            raise SpecError(
                f"invalid template in field {field!r} of task {task_id!r}:\n  {path}: {item!r}: Jinja "
                f"syntax error on line {exc.lineno}: {(exc.message or '').rstrip('.')}"
            ) from None


def template_strings(value: Any, field: str = "spec") -> Iterator[tuple[str, str]]:
    """Every string of the field ``value`` that holds Jinja, with its path (``spec.labels.day``); a
    spec given as a string (or bytes) is one template, its path the field's name."""

    def walk(item: Any, path: str) -> Iterator[tuple[str, str]]:
        if isinstance(item, str):
            if has_jinja(item):
                yield path, item
        elif isinstance(item, Mapping):
            for key, sub in item.items():
                yield from walk(sub, f"{path}.{key}")
        elif isinstance(item, list | tuple):
            for index, sub in enumerate(item):
                yield from walk(sub, f"{path}[{index}]")

    yield from walk(value.decode("utf-8", "replace") if isinstance(value, bytes) else value, field)


def render_spec(
    value: Any,
    render: Callable[[Any], Any],
    *,
    field: str = "spec",
    task_id: str = "?",
    has_logical_date: bool = True,
    skip: Callable[[Any], bool] = lambda _item: False,
) -> Any:
    """Render the templated spec field ``value`` string by string with ``render`` (the operator's
    ``render_template``), as Airflow renders a dict, list or string; dict keys are not rendered.

    A spec given as a string is rendered structurally (``_render_document``): parsed first, then its
    string values rendered one by one, never text into the document.

    A string that fails to render raises ``SpecError`` naming the operator's field and the string's path
    in the spec: ``cannot render field 'spec' of task 'train':`` then ``spec.labels.day: '{{ ds_nodash
    }}': 'ds_nodash' is undefined``, and, when the run has no logical date and the template needs one,
    why and what to use instead. ``skip`` marks the values left as they are (Airflow's already-rendered
    ids).
    """

    def walk(item: Any, path: str) -> Any:
        if skip(item):
            return item
        if isinstance(item, str):
            try:
                return render(item)
            except Exception as exc:  # a Jinja error of any kind: named with its path
                failure = _render_failure(path, item, exc, has_logical_date)
                raise SpecError(f"cannot render field {field!r} of task {task_id!r}:\n  {failure}") from None
        if isinstance(item, dict):
            return {key: walk(sub, f"{path}.{key}") for key, sub in item.items()}
        if isinstance(item, list) or item.__class__ is tuple:
            rendered = [walk(sub, f"{path}[{index}]") for index, sub in enumerate(item)]
            return rendered if isinstance(item, list) else tuple(rendered)
        return render(item)  # anything else as Airflow renders it

    if isinstance(value, str | bytes) and not skip(value):
        return _render_document(value, lambda item: walk(item, field), field, task_id)
    return walk(value, field)


#: A string that is one Jinja expression and nothing else: it renders the whole document.
_ONE_EXPRESSION = re.compile(r"\s*\{\{(?:(?!\}\}|\{\{|\{%|\{#).)*\}\}\s*", re.DOTALL)


def _render_document(text: str | bytes, walk: Callable[[Any], Any], field: str, task_id: str) -> Any:
    """A spec given as a string, rendered structurally. A JSON or YAML document is parsed (a key
    given twice refused), then its string values are rendered (``walk``): a rendered value stays one
    value whatever it holds, so it can neither end its quoted string nor add a key. A string that is
    one Jinja expression and nothing else (``{{ var.value.my_spec }}``) renders the whole document,
    which is then parsed as it is (nothing in it rendered again). Any other Jinja in a string spec
    would write the document's text (``{% for %}``, ``{{ }}`` outside a quoted value) and is refused."""
    if not has_jinja(text if isinstance(text, str) else text.decode("utf-8", "replace")):
        return text  # nothing to render: coerce_spec parses (and judges) it
    try:
        parsed = parse_spec_document(text, field)
    except DuplicateKeyError as exc:
        raise SpecError(f"cannot render field {field!r} of task {task_id!r}:\n  {exc}") from None
    except Exception:  # Jinja in the document's text: not a document until rendered
        parsed = None
    if isinstance(parsed, Mapping):
        return walk(dict(parsed))
    if isinstance(text, str) and _ONE_EXPRESSION.fullmatch(text):
        rendered = walk(text)
        if isinstance(rendered, str | bytes):
            return _parse_document(rendered, " after rendering")
        return rendered
    raise SpecError(
        f"cannot render field {field!r} of task {task_id!r}:\n  {field}: a spec given as a string is parsed "
        "as JSON or YAML first and Jinja is rendered inside its string values only; this one is not a "
        "document before rendering (Jinja writes its text: a {% %} block, or {{ }} outside a quoted "
        "value). Quote each templated value (display_name: '{{ params.name }}'), give the spec as a dict, "
        "or render the whole document from one expression ('{{ var.value.my_spec }}')"
    )
