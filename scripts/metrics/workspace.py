"""The workspace as the metrics see it: crates, their layer (pure logic or ROS node), source files, the modules
each file imports, and the circles among them."""

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import rust_source


@dataclass
class SourceFile:
    path: Path
    module: tuple  # the module path inside its crate, () for the crate root
    code: str  # blanked, test modules blanked too
    lines: int  # physical lines of the file outside its `#[cfg(test)]` modules


@dataclass
class Crate:
    name: str
    folder: Path
    package: str  # the ROS package (the folder under packages/), or the crate's folder elsewhere
    ros: bool  # depends on r2r: a node layer
    deps: list  # workspace crates it depends on (normal dependencies)
    dep_folders: list = field(default_factory=list)  # folders of its path dependencies (members or not)
    files: list = field(default_factory=list)
    imports: dict = field(default_factory=dict)  # file path -> {file path: sorted names}


def load(repo: Path) -> list:
    root = tomllib.loads((repo / "Cargo.toml").read_text())
    shared = root["workspace"].get("dependencies", {})
    manifests = {m: tomllib.loads((repo / m / "Cargo.toml").read_text()) for m in root["workspace"]["members"]}
    names = {m: t["package"]["name"] for m, t in manifests.items()}
    by_folder = {str(Path(m)): n for m, n in names.items()}
    crates = []
    for member, manifest in manifests.items():
        deps = manifest.get("dependencies", {})
        local, folders = [], []
        for dep, spec in deps.items():
            spec = shared.get(dep, {}) if isinstance(spec, dict) and spec.get("workspace") else spec
            if isinstance(spec, dict) and "path" in spec:
                base = repo if spec is shared.get(dep) else repo / member
                folder = str((base / spec["path"]).resolve().relative_to(repo.resolve()))
                local.append(by_folder.get(folder, dep))
                folders.append(repo / folder)
        parts = Path(member).parts
        crate = Crate(names[member], repo / member, parts[1] if parts[0] == "packages" else member,
                      "r2r" in deps, sorted(local), sorted(folders))
        crate.files = list(_sources(crate.folder / "src"))
        crate.imports = _imports(crate.files)
        crates.append(crate)
    return sorted(crates, key=lambda c: c.name)


def _sources(src: Path):
    """The crate's source files with their module paths; test-only files (tests.rs, tests/ folders) left out.
    Binaries under src/bin are roots of their own."""
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(src)
        if "tests" in rel.parts[:-1] or rel.name == "tests.rs":
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[0] == "bin":
            parts = ["bin:" + parts[1]] + parts[2:]
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        text = path.read_text(errors="replace")
        blanked = rust_source.blank(text)
        code = rust_source.without_test_modules(blanked)
        lines = text.count("\n") + (0 if text.endswith("\n") else 1) - rust_source.test_module_lines(blanked)
        yield SourceFile(path, tuple(parts), code, lines)


def _imports(files: list) -> dict:
    """For each file, the other files of its crate it names, and the names it takes from each."""
    modules = {f.module: f for f in files}
    defined = {f.module: rust_source.defined_names(f.code) for f in files}
    reexports = {f.module: [p for public, p in rust_source.use_paths(f.code) if public] for f in files}

    def resolve(base: tuple, path: list, depth: int = 0):
        """(file module, name) that `path`, written in module `base`, leads to; None outside the crate."""
        if not path or depth > 8:
            return None
        head, *rest = path
        if head == "crate":
            # In a binary under src/bin, `crate` is the binary's own root.
            at = base[:1] if base and base[0].startswith("bin:") else ()
        elif head in ("super", "self"):
            at = base
            while path and path[0] in ("super", "self"):
                at = at[:-1] if path[0] == "super" else at
                path = path[1:]
            rest = path
        elif base + (head,) in modules:
            at, rest = base + (head,), rest
        else:
            return None
        while rest and at + (rest[0],) in modules:
            at, rest = at + (rest[0],), rest[1:]
        if not rest or rest[0] in defined.get(at, ()):
            return at, (rest[0] if rest else "")
        for re_path in reexports.get(at, ()):
            if re_path and re_path[-1] in (rest[0], "*"):
                hit = resolve(at, re_path[:-1] + [rest[0]], depth + 1)
                if hit and hit[0] != at:
                    return hit
        return at, rest[0]

    result = {}
    for f in files:
        named = {}
        for path in [p for _, p in rust_source.use_paths(f.code)] + list(rust_source.paths(f.code)):
            hit = resolve(f.module, path)
            if hit and hit[0] != f.module and hit[0] in modules:
                named.setdefault(modules[hit[0]].path, set()).add(hit[1] or hit[0][-1])
        result[f.path] = {k: sorted(n for n in v if n) for k, v in named.items()}
    return result


def circles(crate: Crate) -> list:
    """The strongly connected groups of two or more files (Tarjan), each sorted, the list sorted."""
    return strongly_connected({f.path: sorted(crate.imports.get(f.path, {})) for f in crate.files})


def strongly_connected(graph: dict) -> list:
    """The groups of two or more nodes of `graph` (node -> nodes it points to) that reach each other."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return sorted(groups)


def nested_in_ros(crates: list) -> list:
    """Pure crates whose folder lies inside the folder of a crate that links ROS: a core that builds without ROS
    must not live, or be reached through a path, under a ROS package's crate."""
    ros = [c for c in crates if c.ros]
    folders = {c.folder: c.name for c in crates if not c.ros}
    folders.update({f: f"{f.name} (a path dependency of {c.name})" for c in crates if not c.ros
                    for f in c.dep_folders if f not in {d.folder for d in crates}})
    return sorted((name, r.name) for folder, name in folders.items() for r in ros if r.folder in folder.parents)


def lines(files: list) -> int:
    return sum(f.lines for f in files)



def duplicates(repo: Path) -> list:
    """Crates with more than one version in Cargo.lock: (name, [(version, sorted names of the crates that
    depend on that version)], the versions the workspace's own crates use)."""
    lock = tomllib.loads((repo / "Cargo.lock").read_text())["package"]
    ours = {p["name"] for p in lock if "source" not in p}
    versions = {}
    for p in lock:
        versions.setdefault(p["name"], []).append(p["version"])
    users = {}
    for p in lock:
        for dep in p.get("dependencies", []):
            name, *version = dep.split()
            if len(versions.get(name, [])) > 1:
                v = version[0] if version else versions[name][0]
                users.setdefault((name, v), set()).add(p["name"])
    result = []
    for name, vs in sorted(versions.items()):
        if len(vs) > 1:
            by = [(v, sorted(users.get((name, v), ()))) for v in sorted(vs)]
            result.append((name, by, sorted(v for v, u in by if ours & set(u))))
    return result
