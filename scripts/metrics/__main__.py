"""The code's shape, measured: lines per layer (pure-logic cores and ROS node layers) in each package, the node
files and functions over their limits, the longest functions, and import circles inside each crate. With
--contributing, also the generated dependency graphs section of CONTRIBUTING.md (written with --write, compared
with --check).

    python3 scripts/metrics [--repo DIR] [--check KINDS] [--contributing CONTRIBUTING.md [--write]] [--top N]

--check KINDS exits 1 when a limit of one of those kinds is broken (comma-separated, or `all`): `circles`
(modules of one crate, or of one Python package under packages/, that import each other), `node-files` (a node file over 400 lines), `functions` (a
function over 80 lines), `layers` (a package whose node layer has half the lines of its core or more), `layout` (a crate without ROS whose
folder lies inside the folder of a crate that links ROS),
`graphs` (the graphs section of --contributing is not up to date), `deps` (the workspace's own crates use two versions of
one crate; versions that only other crates bring are listed, not counted). Lines are physical lines of src/ files
outside their `#[cfg(test)]` modules.
"""

import argparse
import sys
from pathlib import Path

import graphs
import python_source
import rust_source
import workspace

NODE_FILE_MAX_LINES = 400
FUNCTION_MAX_LINES = 80
NODE_TO_CORE_MAX = 0.5


def main() -> int:
    ap = argparse.ArgumentParser(prog="python3 scripts/metrics", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", default="", metavar="KINDS",
                    help="exit 1 when a limit of these kinds is broken: circles, node-files, functions, layers, "
                         "layout, graphs, deps, or all")
    ap.add_argument("--contributing", type=Path, help="the CONTRIBUTING.md whose graphs section to compare")
    ap.add_argument("--write", action="store_true", help="write the graphs section into --contributing")
    ap.add_argument("--top", type=int, default=10, help="how many of the longest functions to list")
    ap.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[2],
                    help="the workspace to measure (default: this repository)")
    args = ap.parse_args()
    repo = args.repo.resolve()
    crates = workspace.load(repo)
    broken = []

    print("lines per layer (src/ outside test modules)")
    print(f"{'package':<24}{'core':>8}{'node':>8}{'node/core':>11}")
    packages = sorted({c.package for c in crates})
    totals = [0, 0]
    for package in packages:
        core = sum(workspace.lines(c.files) for c in crates if c.package == package and not c.ros)
        node = sum(workspace.lines(c.files) for c in crates if c.package == package and c.ros)
        totals[0] += core
        totals[1] += node
        ratio = f"{node / core:.2f}" if core and node else "-"
        flag = ""
        if core and node and node / core >= NODE_TO_CORE_MAX:
            flag = f"  over {NODE_TO_CORE_MAX}"
            broken.append(("layers", f"{package}: node layer {node} lines, core {core}"))
        print(f"{package:<24}{core:>8}{node:>8}{ratio:>11}{flag}")
    print(f"{'all':<24}{totals[0]:>8}{totals[1]:>8}{totals[1] / max(totals[0], 1):>11.2f}\n")

    rel = lambda p: p.relative_to(repo)  # noqa: E731
    big = sorted(((f.lines, rel(f.path)) for c in crates if c.ros for f in c.files), reverse=True)
    over = [(n, p) for n, p in big if n > NODE_FILE_MAX_LINES]
    print(f"node files over {NODE_FILE_MAX_LINES} lines: {len(over)}")
    for n, p in over:
        print(f"  {n:>5}  {p}")
        broken.append(("node-files", f"{p}: {n} lines"))

    fns = sorted(((length, f"{rel(f.path)}:{first}", name) for c in crates for f in c.files
                  for name, first, length in rust_source.functions(f.code)), reverse=True)
    long = [x for x in fns if x[0] > FUNCTION_MAX_LINES]
    print(f"\nfunctions over {FUNCTION_MAX_LINES} lines: {len(long)}; the {args.top} longest:")
    for length, where, name in fns[:max(args.top, len(long))]:
        print(f"  {length:>5}  {name}  {where}")
    broken += [("functions", f"{where} {name}: {length} lines") for length, where, name in long]

    groups = [(c, g) for c in crates for g in workspace.circles(c)]
    print(f"\nimport circles inside a crate: {len(groups)}")
    for crate, group in groups:
        print(f"  {crate.name}: " + ", ".join(str(rel(p)) for p in group))
        for a in group:
            for b, names in sorted(crate.imports[a].items()):
                if b in group:
                    print(f"      {rel(a)} -> {rel(b)}: {', '.join(names[:6])}")
        broken.append(("circles", f"circle in {crate.name}"))

    py_groups = [(folder, g) for folder, graph in python_source.packages(repo)
                 for g in workspace.strongly_connected(graph)]
    print(f"\nimport circles inside a Python package: {len(py_groups)}")
    for folder, group in py_groups:
        print(f"  {rel(folder)}: " + ", ".join(str(rel(p)) for p in group))
        broken.append(("circles", f"circle in {rel(folder)}"))

    nested = workspace.nested_in_ros(crates)
    print(f"\npure crates inside the folder of a crate that links ROS: {len(nested)}")
    for pure, ros in nested:
        print(f"  {pure} inside {ros}")
        broken.append(("layout", f"{pure} lies inside {ros}'s folder"))

    dups = workspace.duplicates(repo)
    print(f"\ncrates with more than one version in Cargo.lock: {len(dups)} (who depends on each version; "
          "`*`: our crates use more than one)")
    for name, versions, ours in dups:
        print(f"  {'*' if len(ours) > 1 else ' '} {name}: " + "; ".join(
            f"{v} ({', '.join(users[:4])}{', ...' if len(users) > 4 else ''})" for v, users in versions))
        if len(ours) > 1:
            broken.append(("deps", f"{name}: our crates use {', '.join(ours)}"))

    if args.contributing:
        text = args.contributing.read_text()
        new = graphs.replace_section(text, graphs.section(repo, crates))
        if args.write and new != text:
            args.contributing.write_text(new)
            print(f"\nwrote the graphs section of {args.contributing}")
        elif new != text:
            print(f"\nthe graphs section of {args.contributing} is not up to date: "
                  "python3 scripts/metrics --contributing CONTRIBUTING.md --write")
            broken.append(("graphs", "graphs section out of date"))
        else:
            print(f"\nthe graphs section of {args.contributing} is up to date")

    kinds = {"circles", "node-files", "functions", "layers", "layout", "graphs", "deps"}
    checked = kinds if args.check == "all" else {k for k in args.check.split(",") if k}
    if checked - kinds:
        ap.error(f"--check: unknown kind(s) {', '.join(sorted(checked - kinds))} (known: {', '.join(sorted(kinds))})")
    counts = {k: sum(1 for kind, _ in broken if kind == k) for k in sorted(kinds)}
    print("\nlimits broken: " + ", ".join(f"{k} {n}" for k, n in counts.items())
          + (f"; checked: {', '.join(sorted(checked))}" if checked else ""))
    failed = [text for kind, text in broken if kind in checked]
    for text in failed:
        print(f"  over the limit: {text}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
