"""The CloudWatch dashboard body structure, as documented, as a checker.

Written from "Dashboard Body Structure and Syntax" (CloudWatch API Reference,
``CloudWatch-Dashboard-Body-Structure``) and the metric widget's "Format for each metric in
the array" section. It covers the widget types the template uses (``metric``, ``text``,
``alarm``) and refuses any other, so a new widget type needs its rules added here first.

The rules that matter most (CloudWatch rejects the body, and the stack rolls back):

- ``metrics`` is an *array of arrays*: every entry is an array. A metric entry is
  ``[Namespace, MetricName, DimName, DimValue, ..., {rendering options}]`` (``"..."``
  repeats the entry above's value in that position); a math or SEARCH expression is
  ``[{"expression": ..., "id": ..., "label": ...}]``, an array holding one object.
- ``region`` is required in a metric widget; ``view`` is one of the documented values.
- an alarm widget lists 1-100 alarm ARNs; a text widget has ``markdown``.
- a widget is at most 24 wide, at most 1000 high, at ``x`` 0-23.

``check_dashboard(body)`` returns the list of problems (empty: the body is well formed).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["check_dashboard"]

BODY_KEYS = {"widgets", "start", "end", "periodOverride", "variables"}
WIDGET_KEYS = {"type", "x", "y", "width", "height", "properties"}
WIDGET_TYPES = {"metric", "text", "alarm"}  # the ones this template uses; others refused
METRIC_PROPERTIES = {
    "accountId",
    "annotations",
    "end",
    "legend",
    "liveData",
    "metrics",
    "period",
    "region",
    "setPeriodToTimeRange",
    "singleValueFullPrecision",
    "sparkline",
    "stacked",
    "start",
    "stat",
    "table",
    "timezone",
    "title",
    "trend",
    "view",
    "yAxis",
}
VIEWS = {"timeSeries", "singleValue", "gauge", "bar", "pie", "table"}
TEXT_PROPERTIES = {"markdown", "background"}
ALARM_PROPERTIES = {"alarms", "sortBy", "states", "title"}
# The rendering options an entry's trailing object may carry.
RENDERING = {"accountId", "color", "expression", "id", "label", "period", "region", "stat"}
RENDERING |= {"visible", "yAxis"}
SIMPLE_STATS = {"SampleCount", "Average", "Sum", "Minimum", "Maximum", "IQM"}
STAT = re.compile(r"^(p|tm|wm|tc|ts|pr)\d{1,2}(\.\d+)?$|^(TM|WM|TC|TS|PR)\(.+\)$")
ID = re.compile(r"^[a-z][A-Za-z0-9_]*$")
COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")
ALARM_ARN = re.compile(r"^arn:[^:]+:cloudwatch:[^:]+:[^:]+:alarm:.+$")
ANNOTATION_KEYS = {"value", "label", "color", "fill", "visible", "yAxis"}


def _stat(value: Any) -> bool:
    return isinstance(value, str) and (value in SIMPLE_STATS or bool(STAT.match(value)))


def _rendering(where: str, options: Any, problems: list[str], *, expression: bool) -> None:
    if not isinstance(options, dict):
        problems.append(f"{where}: the rendering options must be an object")
        return
    unknown = set(options) - RENDERING
    if unknown:
        problems.append(f"{where}: unknown rendering option(s) {sorted(unknown)}")
    if expression and not isinstance(options.get("expression"), str):
        problems.append(f"{where}: an expression entry needs an 'expression' string")
    if not expression and "expression" in options:
        problems.append(f"{where}: an 'expression' must be alone in its array")
    if "id" in options and not (isinstance(options["id"], str) and ID.match(options["id"])):
        problems.append(f"{where}: id {options['id']!r} must start with a lowercase letter")
    if "stat" in options and not _stat(options["stat"]):
        problems.append(f"{where}: unknown stat {options['stat']!r}")
    if "yAxis" in options and options["yAxis"] not in ("left", "right"):
        problems.append(f"{where}: yAxis must be 'left' or 'right'")
    if "color" in options and not COLOR.match(str(options["color"])):
        problems.append(f"{where}: color must be #rrggbb")
    if "label" in options and not isinstance(options["label"], str):
        problems.append(f"{where}: label must be a string")
    if "visible" in options and not isinstance(options["visible"], bool):
        problems.append(f"{where}: visible must be a boolean")
    if "period" in options and not _period(options["period"]):
        problems.append(f"{where}: period must be 1, 5, 10, 30 or a multiple of 60")


def _period(value: Any) -> bool:
    return isinstance(value, int) and value > 0 and (value in (1, 5, 10, 30) or value % 60 == 0)


def _metric_entry(where: str, entry: Any, above: list | None, problems: list[str]) -> None:
    if not isinstance(entry, list):
        problems.append(
            f"{where}: every metrics entry must be an array, not {type(entry).__name__}"
            + (" (wrap an expression object in [...])" if isinstance(entry, dict) else "")
        )
        return
    if not entry:
        problems.append(f"{where}: an empty metrics entry")
        return
    options = entry[-1] if isinstance(entry[-1], dict) else None
    values = entry[:-1] if options is not None else entry
    if options is not None and not values:
        _rendering(where, options, problems, expression=True)
        return
    if options is not None:
        _rendering(where, options, problems, expression=False)
    if any(isinstance(v, (dict, list)) for v in values):
        problems.append(f"{where}: only the last element of an entry may be an object")
        return
    if len(values) < 2 or len(values) % 2:
        problems.append(
            f"{where}: a metric is Namespace, MetricName, then dimension name/value pairs "
            f"({len(values)} values)"
        )
        return
    for i, value in enumerate(values):
        if value == "..." or value == ".":
            if above is None or i >= len([v for v in above if not isinstance(v, dict)]):
                problems.append(f"{where}: '{value}' at {i} has nothing above it to repeat")
        elif not isinstance(value, str) or not value:
            problems.append(f"{where}: value {i} must be a non-empty string, not {value!r}")


def _metric_widget(where: str, props: dict, problems: list[str]) -> None:
    unknown = set(props) - METRIC_PROPERTIES
    if unknown:
        problems.append(f"{where}: unknown metric widget propert(ies) {sorted(unknown)}")
    if not isinstance(props.get("region"), str) or not props["region"]:
        problems.append(f"{where}: a metric widget needs 'region'")
    if "view" in props and props["view"] not in VIEWS:
        problems.append(f"{where}: view {props['view']!r} is not one of {sorted(VIEWS)}")
    if "stat" in props and not _stat(props["stat"]):
        problems.append(f"{where}: unknown stat {props['stat']!r}")
    if "period" in props and not _period(props["period"]):
        problems.append(f"{where}: period must be 1, 5, 10, 30 or a multiple of 60")
    if "stacked" in props and not isinstance(props["stacked"], bool):
        problems.append(f"{where}: stacked must be a boolean")
    metrics = props.get("metrics")
    if not isinstance(metrics, list) or not 1 <= len(metrics) <= 500:
        problems.append(f"{where}: 'metrics' must be an array of 1-500 entries")
        return
    ids: set[str] = set()
    above: list | None = None
    for i, entry in enumerate(metrics):
        _metric_entry(f"{where}.metrics[{i}]", entry, above, problems)
        if isinstance(entry, list) and entry and isinstance(entry[-1], dict):
            found = entry[-1].get("id")
            if isinstance(found, str):
                if found in ids:
                    problems.append(f"{where}.metrics[{i}]: duplicate id {found!r}")
                ids.add(found)
        above = entry if isinstance(entry, list) else None
    for side, items in (props.get("annotations") or {}).items():
        if side not in ("horizontal", "vertical") or not isinstance(items, list):
            problems.append(f"{where}: annotations has 'horizontal'/'vertical' arrays only")
            continue
        for j, note in enumerate(items):
            if not isinstance(note, dict) or "value" not in note:
                problems.append(f"{where}.annotations.{side}[{j}]: needs a 'value'")
            elif set(note) - ANNOTATION_KEYS:
                problems.append(f"{where}.annotations.{side}[{j}]: unknown keys")


def check_dashboard(body: Any) -> list[str]:
    """Every way ``body`` (the parsed DashboardBody) breaks the documented structure."""
    problems: list[str] = []
    if not isinstance(body, dict):
        return ["the body must be a JSON object"]
    unknown = set(body) - BODY_KEYS
    if unknown:
        problems.append(f"unknown top-level key(s) {sorted(unknown)}")
    if body.get("periodOverride", "auto") not in ("auto", "inherit"):
        problems.append("periodOverride must be 'auto' or 'inherit'")
    widgets = body.get("widgets")
    if not isinstance(widgets, list) or len(widgets) > 500:
        return [*problems, "'widgets' must be an array of at most 500 widgets"]
    for n, widget in enumerate(widgets):
        where = f"widgets[{n}]"
        if not isinstance(widget, dict):
            problems.append(f"{where}: a widget is an object")
            continue
        if set(widget) - WIDGET_KEYS:
            problems.append(f"{where}: unknown widget key(s) {sorted(set(widget) - WIDGET_KEYS)}")
        kind = widget.get("type")
        if kind not in WIDGET_TYPES:
            problems.append(f"{where}: widget type {kind!r} is not checked here")
            continue
        for key, low, high in (("x", 0, 23), ("width", 1, 24), ("height", 1, 1000)):
            value = widget.get(key)
            if value is not None and not (isinstance(value, int) and low <= value <= high):
                problems.append(f"{where}: {key} must be an integer {low}-{high}")
        y = widget.get("y")
        if y is not None and not (isinstance(y, int) and y >= 0):
            problems.append(f"{where}: y must be a non-negative integer")
        if isinstance(widget.get("x"), int) and isinstance(widget.get("width"), int):
            if widget["x"] + widget["width"] > 24:
                problems.append(f"{where}: x + width is over 24")
        props = widget.get("properties")
        if not isinstance(props, dict):
            problems.append(f"{where}: 'properties' is required")
            continue
        if kind == "metric":
            _metric_widget(where, props, problems)
        elif kind == "text":
            if set(props) - TEXT_PROPERTIES:
                problems.append(f"{where}: unknown text widget properties")
            if not isinstance(props.get("markdown"), str):
                problems.append(f"{where}: a text widget needs 'markdown'")
            if props.get("background", "solid") not in ("solid", "transparent"):
                problems.append(f"{where}: background is 'solid' or 'transparent'")
        else:
            if set(props) - ALARM_PROPERTIES:
                problems.append(f"{where}: unknown alarm widget properties")
            alarms = props.get("alarms")
            if not isinstance(alarms, list) or not 1 <= len(alarms) <= 100:
                problems.append(f"{where}: an alarm widget lists 1-100 alarm ARNs")
            else:
                for arn in alarms:
                    if not (isinstance(arn, str) and ALARM_ARN.match(arn)):
                        problems.append(f"{where}: {arn!r} is not an alarm ARN")
    return problems
