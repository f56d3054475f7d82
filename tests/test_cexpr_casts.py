"""The token parser's C-style casts to a pointer or reference of a named type (`*(float2 *)&v[i]`):
a name ending in a declarator before ')' is a type, so a cast when an operand follows; every
other parenthesised expression stays what it was."""

import pytest

from tkcheck.frontend import cexpr
from tkcheck.frontend.lexer import lex

VALUES = {"v", "p", "a", "b", "i", "x"}


def parse(text):
    return cexpr.parse_expression(lex(text), lambda n: n in VALUES)


@pytest.mark.parametrize(
    "text, type_name",
    [
        ("*(float2 *)&v[i]", "float2"),
        ("(bf16_2 *)p", "bf16_2"),
        ("(const ns::pair &)v[i]", None),
        ("(T *)-1", "T"),
    ],
)
def test_a_cast_to_a_pointer_of_a_named_type(text, type_name):
    node = parse(text)
    cast = node.a if isinstance(node, cexpr.Un) else node
    assert isinstance(cast, cexpr.Cast), node
    if type_name is not None:
        assert cexpr.name_of(cast.type) == type_name


@pytest.mark.parametrize(
    "text, expected",
    [
        ("(a * b)", cexpr.Bin("*", cexpr.Name.simple("a"), cexpr.Name.simple("b"))),
        ("(a) * p", cexpr.Bin("*", cexpr.Name.simple("a"), cexpr.Name.simple("p"))),
        ("(a & b) + 1", cexpr.Bin("+", cexpr.Bin("&", cexpr.Name.simple("a"), cexpr.Name.simple("b")), cexpr.Num(1))),
    ],
)
def test_parenthesised_expressions_are_no_casts(text, expected):
    assert parse(text) == expected


def test_the_assignment_of_a_register_element_from_a_shared_pair_parses():
    node = parse("r.tiles[0][i].data[0] = *(float2 *)&v[i][2 * i + 8]")
    assert isinstance(node, cexpr.Assign) and isinstance(node.value, cexpr.Un)
    assert isinstance(node.value.a, cexpr.Cast)
