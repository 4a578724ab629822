"""Every line of docs/limitations.md names the test that shows it (`path::test_name`), and that test exists: a
limitation that is lifted fails its test, and the line goes with it."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))

from docs_runner import REPO_ROOT  # noqa: E402

PAGE = REPO_ROOT / "docs/limitations.md"
TEST_REF = re.compile(r"`(test/[\w/]+\.py)::(test_\w+)`")


def limitation_lines() -> list[tuple[int, str]]:
    """Each bullet of the page (its continuation lines joined), with its line number."""
    bullets, current = [], None
    for number, line in enumerate(PAGE.read_text().splitlines(), 1):
        if line.startswith("- "):
            current = [number, line]
            bullets.append(current)
        elif current and line.startswith("  "):
            current[1] += " " + line.strip()
        else:
            current = None
    return [tuple(b) for b in bullets]


def test_every_limitation_names_a_test_that_exists():
    lines = limitation_lines()
    assert len(lines) >= 10, lines
    for number, text in lines:
        refs = TEST_REF.findall(text)
        assert refs, f"docs/limitations.md:{number}: names no test (`test/...py::test_...`): {text}"
        for path, name in refs:
            source = REPO_ROOT / path
            assert source.is_file(), f"docs/limitations.md:{number}: {path} does not exist"
            assert re.search(rf"^def {name}\(", source.read_text(), re.M), \
                f"docs/limitations.md:{number}: {path} has no test `{name}`"


def test_the_readme_has_no_limitations_list_of_its_own():
    # One list, the tested one: a second would drift.
    readme = (REPO_ROOT / "README.md").read_text()
    assert "## Not supported" not in readme and "## Limitations" not in readme
