"""The Python packages under packages/ as the metrics see them: which module of a package imports which other
module of the same package (imports inside functions count: a lazy import still ties the two together)."""

import ast
from pathlib import Path


def packages(repo: Path) -> list:
    """(package folder, {module file: sorted module files of the same package it imports}) for each Python package
    (a folder with __init__.py) under packages/, sorted."""
    found = []
    for init in sorted((repo / "packages").rglob("__init__.py")):
        folder = init.parent
        if (folder.parent / "__init__.py").exists() or "test" in folder.parts:
            continue  # a sub-package is measured with its top package
        found.append((folder, _imports(folder)))
    return found


def _imports(folder: Path) -> dict:
    files = sorted(folder.rglob("*.py"))
    by_name = {_dotted(folder, f): f for f in files}
    graph = {}
    for f in files:
        try:
            tree = ast.parse(f.read_text(errors="replace"), str(f))
        except SyntaxError:
            graph[f] = []
            continue
        here = _dotted(folder, f)
        targets = set()
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(here, f.name == "__init__.py", node.module, node.level)
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            for name in names:
                if name in by_name and by_name[name] != f:
                    targets.add(by_name[name])
        graph[f] = sorted(targets)
    return graph


def _dotted(folder: Path, f: Path) -> str:
    parts = (folder.name,) + f.relative_to(folder).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(here: str, is_init: bool, module, level: int) -> str:
    if level == 0:
        return module or ""
    base = here.split(".")
    base = base[: len(base) - (level - 1 if is_init else level)]
    return ".".join(base + ([module] if module else []))
