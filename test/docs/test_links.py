"""Every relative link of every Markdown file in the repository resolves: the file or folder exists, and an
anchor (`page.md#section`) is a heading of that page, slugged as GitHub does. Links inside code blocks and to
other sites are not checked (nothing here reads outside the repository)."""

import re
import subprocess

import pytest

from lockstep_testing.harness import REPO_ROOT

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def markdown_files() -> list:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.split()
    return sorted(REPO_ROOT / p for p in listed if "node_modules" not in p and (REPO_ROOT / p).is_file())


def slug(heading: str) -> str:
    text = re.sub(r"[`*_]|\[|\]\([^)]*\)", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page) -> set:
    text = FENCE.sub("", page.read_text())
    found, seen = set(), {}
    for line in text.splitlines():
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return found


def links(page) -> list:
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), page.read_text())
    text = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), text)
    out = []
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):
            continue
        out.append((text.count("\n", 0, m.start()) + 1, target))
    return out


PAGES = markdown_files()


def test_the_guide_and_readme_are_checked():
    names = {p.relative_to(REPO_ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/README.md", "docs/limitations.md"} <= names, names


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO_ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page):
    broken = []
    for line, target in links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(REPO_ROOT)}:{line}: {target}"
        if not resolved.exists():
            broken.append(f"{where}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{where}: no heading `{anchor}` in {resolved.relative_to(REPO_ROOT)}")
    assert not broken, "\n".join(broken)
