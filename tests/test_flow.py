"""devlint.analysis.reaching: which bindings of a name reach a point, and whether it is bound on every path."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from devlint.analysis.reaching import Reach, reaching_at, reaching_at_end


def _parents(module: cst.Module) -> dict[cst.CSTNode, cst.CSTNode]:
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        for child in node.children:
            parents[child] = node
            stack.append(child)
    return parents


def reach(source: str, name: str = "d") -> Reach:
    """What ``name`` may hold at the call ``SITE()`` (inside the function ``f`` if there is one)."""
    module = cst.parse_module(textwrap.dedent(source))
    parents = _parents(module)
    site = next(
        node for node in parents if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "SITE"
    )
    scope: cst.CSTNode = module
    current = parents.get(site)
    while current is not None:
        if isinstance(current, cst.FunctionDef):
            scope = current
            break
        current = parents.get(current)
    found = reaching_at(name, scope, site, parents.get)
    assert found is not None
    return found


def values(found: Reach) -> list[str]:
    return sorted(cst.Module([]).code_for_node(value) for value in found.values)


def test_both_branches_of_an_if_reach_and_the_name_is_bound() -> None:
    found = reach(
        """
        if fast:
            d = "cuda"
        else:
            d = "cpu"
        SITE()
        """
    )
    assert values(found) == ['"cpu"', '"cuda"'] and not found.maybe_unbound


def test_one_branch_only_may_leave_the_name_unbound() -> None:
    found = reach(
        """
        def f(obj):
            if isinstance(obj, Tensor):
                d = obj.device
            return SITE()
        """
    )
    assert values(found) == ["obj.device"] and found.maybe_unbound


def test_a_branch_that_raises_or_returns_does_not_flow_on() -> None:
    found = reach(
        """
        def f(ok):
            if ok:
                d = 1
            elif other:
                return None
            else:
                raise SystemExit(2)
            SITE()
        """
    )
    assert values(found) == ["1"] and not found.maybe_unbound


def test_a_later_binding_kills_the_earlier_one() -> None:
    found = reach("d = 'cpu'\nd = 'cuda'\nSITE()\nd = 'xpu'\n")
    assert values(found) == ["'cuda'"] and not found.maybe_unbound


def test_a_try_handler_may_run_before_the_binding() -> None:
    found = reach(
        """
        try:
            d = pick()
        except RuntimeError:
            SITE()
        """
    )
    assert values(found) == ["pick()"] and found.maybe_unbound


def test_after_a_try_the_handler_path_joins() -> None:
    found = reach(
        """
        try:
            d = pick()
        except RuntimeError:
            d = "cpu"
        finally:
            log()
        SITE()
        """
    )
    assert values(found) == ['"cpu"', "pick()"] and not found.maybe_unbound


def test_a_loop_body_may_not_run_and_may_run_again() -> None:
    after = reach("for x in xs:\n    d = x\nSITE()\n")
    assert after.maybe_unbound and after.unknown is False and values(after) == ["x"]
    inside = reach("d = 0\nwhile go():\n    SITE()\n    d = 1\n")
    assert values(inside) == ["0", "1"] and not inside.maybe_unbound


def test_loop_targets_with_items_imports_and_del() -> None:
    assert reach("for d in range(3):\n    SITE()\n").unknown
    assert reach("with open(p) as d:\n    SITE()\n").unknown
    assert reach("import d\nSITE()\n").unknown
    assert reach("d = 1\ndel d\nSITE()\n").maybe_unbound


# Each name's analysis steps only the statements that may bind it (the others pass its state on
# or end every path): a binding deep inside a statement must still mark that statement.
@pytest.mark.parametrize(
    "binding",
    [
        "for d in xs:\n        pass",
        "with open(p) as d:\n        pass",
        "try:\n        pass\n    except OSError as d:\n        pass",
        "import d",
        "from m import d",
        "import d.sub",
        "from m import other as d",
        "del d",
        "def d():\n        pass",
        "class d:\n        pass",
        "d += 1",
        "d: str = 'cuda:1'",
        "while (d := pick()):\n        pass",
        "log([(d := y) for y in ys])",
        "global d",
        "d, e = pair",
        "[d, *rest] = items",
    ],
)
def test_a_binding_nested_in_another_statement_is_followed(binding: str) -> None:
    found = reach(f"d = 'cpu'\nif ok:\n    {binding}\nSITE()\n")
    assert values(found) != ["'cpu'"] or found.unknown or found.maybe_unbound


def test_a_match_capture_nested_in_another_statement_is_followed() -> None:
    found = reach("d = 'cpu'\nfor v in vs:\n    match v:\n        case [d]:\n            pass\nSITE()\n")
    assert found.unknown


@pytest.mark.parametrize(
    ("code", "reached"),
    [
        ("if ok:\n    raise ValueError\nelse:\n    raise KeyError\n", []),
        ("try:\n    raise ValueError\nfinally:\n    log()\n", []),
        ("try:\n    raise ValueError\nexcept ValueError:\n    pass\n", ["'cuda'"]),
        ("if ok:\n    raise ValueError\n", ["'cuda'"]),
        ("while ok:\n    raise ValueError\n", ["'cuda'"]),
        ("with ctx():\n    raise ValueError\n", []),
    ],
)
def test_a_statement_binding_nothing_may_still_end_every_path(code: str, reached: list[str]) -> None:
    found = reach(f"d = 'cuda'\n{code}SITE()\n")
    assert values(found) == reached and not found.maybe_unbound


def test_a_walrus_in_a_test_binds() -> None:
    found = reach("if (d := choose()) is not None:\n    SITE()\n")
    assert values(found) == ["choose()"] and not found.maybe_unbound


def test_parameters_reach_and_nested_functions_do_not_bind() -> None:
    found = reach(
        """
        def f(x, d=None):
            def inner():
                d = 5
            SITE()
        """
    )
    assert [p.name.value for p in found.params] == ["d"] and not found.values


def test_match_cases_join_with_no_match() -> None:
    found = reach(
        """
        d = "cpu"
        match kind:
            case "gpu":
                d = "cuda"
            case _:
                pass
        SITE()
        """
    )
    assert values(found) == ['"cpu"', '"cuda"']


def test_a_function_sees_the_end_of_the_module() -> None:
    module = cst.parse_module("d = 'cpu'\nif fast:\n    d = 'cuda'\ndef f():\n    return d\n")
    found = reaching_at_end("d", module)
    assert values(found) == ["'cpu'", "'cuda'"] and not found.maybe_unbound
    assert reaching_at_end("e", module).maybe_unbound


@pytest.mark.parametrize("site_in", ["decorator", "default"])
def test_code_evaluated_outside_the_function_body_is_not_inside_it(site_in: str) -> None:
    source = "@SITE()\ndef f(d):\n    pass\n" if site_in == "decorator" else "def f(x=SITE()):\n    d = 1\n"
    module = cst.parse_module(source)
    parents = _parents(module)
    function = module.body[0]
    site = next(n for n in parents if isinstance(n, cst.Call))
    assert reaching_at("d", function, site, parents.get) is None


def test_a_subscript_target_binds_nothing() -> None:
    found = reach("d = 'cuda'\nd[0] = 1\ndel d[1]\nSITE()\n")
    assert values(found) == ["'cuda'"] and not found.maybe_unbound


def test_the_node_types_decided_by_type_alone_have_no_subclasses() -> None:
    """The scope tracker and the region and version-guard checks decide by ``type(node) is ...`` (LibCST's classes are ABCs, whose isinstance
    is slow on every node): a subclass in a new LibCST would slip past it unrecorded."""
    from devlint.analysis.cuda_regions import EXACT_TYPES
    from devlint.analysis.tracker import _RECORDED
    from devlint.analysis.version_guards import _BRANCHING

    assert [kind.__name__ for kind in _RECORDED | EXACT_TYPES | _BRANCHING if kind.__subclasses__()] == []
