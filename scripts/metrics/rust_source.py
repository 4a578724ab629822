"""Reading Rust source as text: blanking comments and literals, finding functions, `use` trees and paths.

Enough of Rust's lexical grammar to measure code shape (function lengths, which module names which): comments,
strings (also raw and byte strings) and character literals are blanked with spaces so that braces and paths
inside them do not count, and line numbers are kept.
"""

import re

_FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
_CFG_TEST = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")
_USE = re.compile(r"\buse\s+([^;]*);")
_PATH = re.compile(r"(?<![A-Za-z0-9_:])((?:[A-Za-z_][A-Za-z0-9_]*)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def blank(text: str) -> str:
    """The text with comments, string and character literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)

    def skip_to(j: int) -> None:
        nonlocal i
        out.append("".join(c if c == "\n" else " " for c in text[i:j]))
        i = j

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            skip_to(n if j < 0 else j)
        elif text.startswith("/*", i):
            depth, j = 0, i
            while j < n:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                    if depth == 0:
                        break
                else:
                    j += 1
            skip_to(j)
        elif (m := re.match(r'b?r(#*)"', text[i:i + 260])) and (i == 0 or not _ident(text[i - 1])):
            end = text.find('"' + m.group(1), i + m.end())
            skip_to(n if end < 0 else end + 1 + len(m.group(1)))
        elif c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not _ident(text[i - 1]))):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            skip_to(min(n, j + 1))
        elif c == "'":
            # A character literal ('x', '\n', '\u{1F600}') or a lifetime ('a, 'static): only the first is blanked.
            m = re.match(r"'(\\(?:u\{[0-9A-Fa-f]+\}|x[0-9A-Fa-f]{2}|.)|[^\\'])'", text[i:i + 12])
            if m:
                skip_to(i + m.end())
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _ident(c: str) -> bool:
    return c.isalnum() or c == "_"


def matching_brace(code: str, open_at: int) -> int:
    """The index of the brace closing the one at `open_at` (in blanked code), or the end of the text."""
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def without_test_modules(code: str) -> str:
    """Blanked code with the bodies of `#[cfg(test)] mod ... { }` blocks blanked too."""
    while m := _CFG_TEST.search(code):
        end = matching_brace(code, m.end() - 1)
        code = code[:m.start()] + "".join(c if c == "\n" else " " for c in code[m.start():end + 1]) + code[end + 1:]
    return code


def test_module_lines(code: str) -> int:
    """Lines inside `#[cfg(test)] mod ... { }` blocks of blanked code."""
    total, at = 0, 0
    while m := _CFG_TEST.search(code, at):
        end = matching_brace(code, m.end() - 1)
        total += code.count("\n", m.start(), end) + 1
        at = end + 1
    return total


def functions(code: str):
    """(name, first line, number of lines) of each function with a body, in blanked code."""
    for m in _FN.finditer(code):
        j, depth = m.end(), 0
        # The body opens at the first `{` outside the signature's parentheses and generics; `;` first = no body.
        while j < len(code):
            c = code[j]
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif depth == 0 and c == ";":
                break
            elif depth == 0 and c == "{":
                end = matching_brace(code, j)
                first = code.count("\n", 0, m.start()) + 1
                yield m.group(1), first, code.count("\n", m.start(), end) + 1
                break
            j += 1


def use_paths(code: str):
    """Every path a `use` declaration names, its groups expanded: `use a::{b, c::d as e}` gives
    ['a', 'b'] and ['a', 'c', 'd']; with `pub` in front when the declaration re-exports."""
    for m in _USE.finditer(code):
        before = code[max(0, m.start() - 20):m.start()]
        public = bool(re.search(r"\bpub(\([^)]*\))?\s*$", before))
        tree = re.sub(r"\s+as\s+[A-Za-z_][A-Za-z0-9_]*", "", m.group(1))
        for path in _expand(re.sub(r"\s+", "", tree)):
            yield public, path


def _expand(tree: str):
    tree = tree.lstrip(":")
    if "{" not in tree:
        yield [s for s in tree.split("::") if s]
        return
    head, rest = tree.split("{", 1)
    inner = rest[:rest.rfind("}")]
    prefix = [s for s in head.split("::") if s]
    for part in _split_top(inner):
        if part:
            for sub in _expand(part):
                yield prefix + ([] if sub == ["self"] else sub)


def _split_top(inner: str):
    depth, start = 0, 0
    for j, c in enumerate(inner):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            yield inner[start:j]
            start = j + 1
    yield inner[start:]


def paths(code: str):
    """Every `a::b::c` path written outside `use` declarations."""
    code = _USE.sub(lambda m: " " * len(m.group(0)), code)
    for m in _PATH.finditer(code):
        yield m.group(1).split("::")


_ITEM = re.compile(r"\b(?:struct|enum|union|trait|type|fn|const|static|mod|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)")


def defined_names(code: str) -> set:
    """Names of the items a file defines (at any depth: enough to tell where a name lives)."""
    return set(_ITEM.findall(code))
