"""Spelling of DSL tokens: when text may stay bare, and how quoted text, strings and code fences read back."""

from __future__ import annotations

import re

# These mirror the terminals of dsl-grammar/adopter.lark; tests check that bare spellings lex back.
NAME_RE = re.compile(r"(?!\d)\w+(?:\.(?!\d)\w+)*")
IDENT_RE = re.compile(r"(?!\d)\w+")
RULE_ID_RE = re.compile(r"(?!\d)\w[\w.-]*")
TEMP_RE = re.compile(r"%\w+")
NUMBER_RE = re.compile(
    r"-?(?:0[xXoObB][0-9a-fA-F_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][-+]?\d[\d_]*)?[jJ]?)"
)
STRING_RE = re.compile(r"\"(?:[^\"\\\r\n]|\\.)*\"|'(?:[^'\\\r\n]|\\.)*'")
BINOP_RE = re.compile(r"\*\*|//|<<|>>|==|!=|<=|>=|[-+*/%@&^<>]")
TARGET_PATH_RE = re.compile(r"((?!\d)\w+(?:\.(?!\d)\w+)*)((?:\[\*\])*)")
FENCE_TAG_RE = re.compile(r"[\w+.-]*")
PLACEHOLDER_RE = re.compile(r"\$((?!\d)\w+)")

_QUOTE_ESCAPES = {"\\": "\\\\", "`": "\\`", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_QUOTE_UNESCAPES = {"\\": "\\", "`": "`", "n": "\n", "r": "\r", "t": "\t"}
_STRING_UNESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "r": "\r", "t": "\t", "0": "\0"}


def quote(text: str) -> str:
    """Backtick-quote opaque text, escaping backslashes, backticks and line breaks."""
    return "`" + "".join(_QUOTE_ESCAPES.get(ch, ch) for ch in text) + "`"


def unquote(token: str) -> str:
    """Read back a backtick-quoted token (with its backticks)."""
    body = token[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            out.append(_QUOTE_UNESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def is_bare_text(text: str, keywords: frozenset[str]) -> bool:
    """Whether opaque text lexes back as one NAME, NUMBER or STRING token (and is no keyword)."""
    if NAME_RE.fullmatch(text):
        return text not in keywords
    return bool(NUMBER_RE.fullmatch(text) or STRING_RE.fullmatch(text))


def spell_text(text: str, keywords: frozenset[str]) -> str:
    """Opaque text as a token: bare when it reads back unchanged, else backtick-quoted."""
    return text if is_bare_text(text, keywords) else quote(text)


def quote_string(text: str) -> str:
    """A double-quoted DSL string (title, message, kernel, import)."""
    out: list[str] = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ch in "\x7f\x85\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def unquote_string(token: str) -> str:
    """Read back a DSL string token; raises ValueError on a malformed escape."""
    body = token[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _STRING_UNESCAPES:
            out.append(_STRING_UNESCAPES[nxt])
            i += 2
            continue
        width = {"x": 2, "u": 4, "U": 8}.get(nxt)
        digits = body[i + 2 : i + 2 + width] if width else ""
        if not width or len(digits) != width or not re.fullmatch(r"[0-9a-fA-F]+", digits):
            raise ValueError(f"bad escape \\{nxt} in string")
        code = int(digits, 16)
        if code > 0x10FFFF:
            raise ValueError(f"escape \\{nxt}{digits} is not a code point")
        out.append(chr(code))
        i += 2 + width
    return "".join(out)


def fence(text: str, indent: str, tag: str = "", *, inline: bool = False, close: str | None = None) -> str:
    """A code fence holding `text`; block form indents its lines by `indent`, the closing ``` by `close`."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    if inline and text and "\n" not in text and "\r" not in text and text[0] != "`" and text[-1] != "`":
        return ticks + text + ticks
    if close is None or not text.strip():
        close = indent  # all-blank text takes its margin from the closing fence
    if text == "":
        return f"{ticks}{tag}\n{close}{ticks}"
    lines = "\n".join(indent + line if line else "" for line in text.split("\n"))
    return f"{ticks}{tag}\n{lines}\n{close}{ticks}"


class FenceError(ValueError):
    """A malformed code fence; `line` is the 0-based line within the fence token."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def unfence(token: str) -> str:
    """The text of a code fence token: inline as is; block form dedented by its lines' common margin.

    The margin is the leading whitespace that every non-blank line shares (all-blank content uses the
    closing fence's indentation); the text is stored without it, so fenced code reads back the same
    wherever the block is indented.
    """
    ticks = len(token) - len(token.lstrip("`"))
    body = token[ticks:-ticks]
    if "\n" not in body:
        return body
    first, rest = body.split("\n", 1)
    if not FENCE_TAG_RE.fullmatch(first.strip()):
        raise FenceError("only a language name (like `python`) may follow an opening ```", 0)
    cut = rest.rfind("\n")
    if rest[cut + 1 :].strip():
        raise FenceError("a closing ``` must stand on its own line", rest.count("\n") + 1)
    if cut < 0:
        return ""
    lines = rest[:cut].split("\n")
    margins = [line[: len(line) - len(line.lstrip())] for line in lines if line.strip()]
    margin = _common_prefix(margins) if margins else rest[cut + 1 :]
    return "\n".join(line[len(margin) :] if line.startswith(margin) else "" for line in lines)


def _common_prefix(texts: list[str]) -> str:
    first, last = min(texts), max(texts)
    size = 0
    while size < len(first) and first[size] == last[size]:
        size += 1
    return first[:size]


def fence_origin(token: str) -> tuple[int, int]:
    """Where a fence's text starts, relative to the token: (lines below its first line, column).

    Every line of the text starts at that column (inline fences have one line), so a character at
    line i, column c of the text sits at (first line + lines below + i, column + c) in the file.
    """
    ticks = len(token) - len(token.lstrip("`"))
    body = token[ticks:-ticks]
    if "\n" not in body:
        return 0, ticks
    lines = body.split("\n")[1:-1]
    margins = [line[: len(line) - len(line.lstrip())] for line in lines if line.strip()]
    return 1, len(_common_prefix(margins)) if margins else 0
