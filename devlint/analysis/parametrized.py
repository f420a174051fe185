"""The parameters of a test that its parametrize decorators may give None.

A parameter named ``device`` is taken for a device (devlint.analysis.devices), and then
``x.cuda(device)`` and ``x.to(device)`` are one call. They are not where ``device`` is None:
``.cuda(None)`` moves to the current GPU, ``.to(None)`` leaves the tensor where it is. A test
written as ``@pytest.mark.parametrize("device", [None, 0])`` says so itself (Lightning's
``test_device_dtype_mixin.py`` checks that ``.cuda(None)`` lands on the current GPU).

pytest's ``parametrize(argnames, argvalues)``: ``argnames`` a comma-separated string or a list
or tuple of strings; ``argvalues`` one value per case for one name, else one tuple or list per
case, any case possibly wrapped in ``pytest.param(*values, marks=..., id=...)``. The decorator
stands on the function or on its class. Where the values cannot be read (a variable, a
generator, a starred element) the parameter may be given anything, None included.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from devlint.analysis.semantic import SemanticModel, string_value

PARAMETRIZE = "pytest.mark.parametrize"
_CASE = "pytest.param"


def may_be_given_none(model: SemanticModel, decorators: Sequence[cst.Decorator]) -> set[str]:
    """The parameter names that one of ``decorators``' parametrizations gives None, or values
    it cannot read."""
    found: set[str] = set()
    for decorator in decorators:
        call = decorator.decorator
        if not isinstance(call, cst.Call) or model.qualname(call.func) != PARAMETRIZE:
            continue
        names, values = _arguments(call)
        if names is None:
            continue
        labels = _names(names)
        if labels is None:
            continue
        for position, label in enumerate(labels):
            if values is None or any(value is None or _is_none(value) for value in _values_at(model, values, position, len(labels))):
                found.add(label)
    return found


def _arguments(call: cst.Call) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
    names: cst.BaseExpression | None = None
    values: cst.BaseExpression | None = None
    positional = 0
    for given in call.args:
        if given.star:
            return None, None
        keyword = given.keyword.value if given.keyword is not None else None
        if keyword == "argnames" or (keyword is None and positional == 0):
            names = given.value
        elif keyword == "argvalues" or (keyword is None and positional == 1):
            values = given.value
        if keyword is None:
            positional += 1
    return names, values


def _names(names: cst.BaseExpression) -> list[str] | None:
    text = string_value(names)
    if text is not None:
        return [name.strip() for name in text.split(",") if name.strip()]
    if isinstance(names, (cst.List, cst.Tuple)):
        labels = [string_value(element.value) for element in names.elements]
        return None if None in labels else [label.strip() for label in labels if label is not None]
    return None


def _values_at(
    model: SemanticModel, values: cst.BaseExpression, position: int, width: int
) -> Iterator[cst.BaseExpression | None]:
    """The value each case gives the name at ``position`` of ``width`` names; None where a case
    cannot be read."""
    if not isinstance(values, (cst.List, cst.Tuple)):
        yield None
        return
    for element in values.elements:
        if isinstance(element, cst.StarredElement):
            yield None
            continue
        case: Sequence[cst.BaseExpression] | None = [element.value] if width == 1 else _tuple(element.value)
        if isinstance(element.value, cst.Call) and model.qualname(element.value.func) == _CASE:
            case = _case_values(element.value)
        yield case[position] if case is not None and position < len(case) else None


def _tuple(value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    if not isinstance(value, (cst.List, cst.Tuple)) or any(isinstance(e, cst.StarredElement) for e in value.elements):
        return None
    return [element.value for element in value.elements]


def _case_values(call: cst.Call) -> list[cst.BaseExpression] | None:
    if any(given.star for given in call.args):
        return None
    return [given.value for given in call.args if given.keyword is None]


def _is_none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"
