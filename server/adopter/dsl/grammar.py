"""The DSL's Lark parser, built once from dsl-grammar/adopter.lark."""

from __future__ import annotations

from functools import lru_cache

from lark import Lark
from lark.lexer import PatternStr

from adopter.dsl.lexical import NAME_RE
from adopter.resources import grammar_dir

GRAMMAR_FILE = "adopter.lark"


@lru_cache(maxsize=1)
def parser() -> Lark:
    """The LALR parser (contextual lexer, positions kept), built on first use."""
    text = (grammar_dir() / GRAMMAR_FILE).read_text(encoding="utf-8")
    return Lark(
        text,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
        # Lark stores the built LALR tables in the temp folder, keyed by grammar and options: a cold
        # start loads them instead of rebuilding (about a second on a loaded core).
        cache=True,
    )


@lru_cache(maxsize=1)
def keywords() -> frozenset[str]:
    """Every word the grammar spells literally: such text must be quoted where a name is meant."""
    return frozenset(
        term.pattern.value
        for term in parser().terminals
        if isinstance(term.pattern, PatternStr) and NAME_RE.fullmatch(term.pattern.value)
    )
