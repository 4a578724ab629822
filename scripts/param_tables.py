"""The `(allowed: ...)` of each parameter row in the packages' README interface tables, from the nodes' own rule
tables: each node binary prints its rules with `--param-rules` (`name<TAB>allowed`, the same words as the error
a bad value gets), and this script writes them at the end of the row's notes, so the README and `--help` (which
shows the README's rows) say what the node checks, and nothing else.

    python3 scripts/param_tables.py [--write] [--bin-dir target/debug]

Without --write it only checks: exit 1 and one line per row that differs (a rule missing from its row, a
stale range, an `(allowed: ...)` on a parameter without a rule). Binaries not built here (Python nodes) are
skipped with a note.
"""

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"<!--\s*interface:\s*(\S+)")
ALLOWED = " (allowed: "


def rules_of(binary: Path) -> dict[str, str] | None:
    """The binary's rules; None when it is not a node that lists them (a command-line tool)."""
    done = subprocess.run([str(binary), "--param-rules"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return None
    return dict(line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)


def cells(line: str) -> list[str]:
    """The cells of a table row, `\\|` kept inside a cell."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def rewrite(text: str, path: Path, bin_dir: Path, cache: dict, problems: list) -> str:
    out, binary, rules = [], None, {}
    for number, line in enumerate(text.split("\n"), 1):
        if m := MARKER.search(line):
            binary = m.group(1)
            exe = bin_dir / binary
            if not exe.is_file():
                print(f"{path.relative_to(REPO)}:{number}: {binary} is not built in {bin_dir}: skipped")
                binary, rules = None, {}
            else:
                if binary not in cache:
                    cache[binary] = rules_of(exe)
                    if cache[binary] is None:
                        print(f"{path.relative_to(REPO)}:{number}: {binary} does not list parameter rules "
                              "(--param-rules): skipped")
                rules = cache[binary]
                binary = binary if rules is not None else None
        elif binary and not line.lstrip().startswith("|"):
            if line.strip() and out and out[-1].lstrip().startswith("|"):
                binary = None  # the table ended
        if binary and line.lstrip().startswith("| parameter |"):
            row = cells(line)
            name = row[1].strip("`")
            # What this script wrote last time runs from " (allowed: " to the end of the cell (a range has
            # unbalanced brackets, "(0, 1000]", so it is cut there rather than matched).
            notes = row[3].split(ALLOWED)[0] if row[3].endswith(")") else row[3]
            if name in rules:
                notes = f"{notes} (allowed: {rules[name]})".strip()
            if notes != row[3]:
                problems.append(f"{path.relative_to(REPO)}:{number}: {binary} parameter {name}: "
                                f"{'(allowed: ' + rules[name] + ')' if name in rules else 'no rule'}")
                row[3] = notes
                line = "| " + " | ".join(row) + " |"
        out.append(line)
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write the rows instead of only checking them")
    ap.add_argument("--bin-dir", type=Path, default=REPO / "target" / "debug", help="where the node binaries are")
    args = ap.parse_args()
    problems, cache = [], {}
    for readme in sorted(REPO.glob("packages/*/README.md")):
        text = readme.read_text()
        new = rewrite(text, readme, args.bin_dir, cache, problems)
        if args.write and new != text:
            readme.write_text(new)
    for p in problems:
        print(p)
    if problems and not args.write:
        print(f"{len(problems)} parameter row(s) differ from the nodes' rules: python3 scripts/param_tables.py --write")
        return 1
    nodes = sum(1 for r in cache.values() if r is not None)
    print(f"{'wrote' if args.write and problems else 'checked'} the parameter rows of {nodes} node(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
