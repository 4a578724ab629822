"""scripts/metrics on a small workspace made here: it finds an import circle, a long function and a fat node
layer, and --check fails on exactly the kinds asked for."""

import subprocess
import sys
from pathlib import Path

from lockstep_testing.harness import REPO_ROOT

METRICS = REPO_ROOT / "scripts" / "metrics"


def metrics(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(METRICS), "--repo", str(repo), *args], capture_output=True,
                          text=True, timeout=120)


def crate(root: Path, folder: str, name: str, files: dict, deps: str = "") -> None:
    (root / folder / "src").mkdir(parents=True)
    (root / folder / "Cargo.toml").write_text(f'[package]\nname = "{name}"\nversion = "0.1.0"\n\n'
                                              f"[dependencies]\n{deps}")
    for path, text in files.items():
        (root / folder / "src" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / folder / "src" / path).write_text(text)


def workspace(tmp: Path, circle: bool) -> Path:
    core = {
        "lib.rs": "mod a;\nmod b;\npub use a::Alpha;\n",
        # `a` uses `b`; `b` uses `a` only when asked to make a circle (a string or comment naming it never counts).
        "a.rs": "use crate::b::beta;\npub struct Alpha;\npub fn alpha() -> u8 { beta() }\n",
        "b.rs": ("use super::a::Alpha;\npub fn beta() -> u8 { let _ = Alpha; 1 }\n" if circle else
                 "// crate::a::Alpha\npub fn beta() -> u8 { let _ = \"crate::a::Alpha\"; 1 }\n"),
    }
    long_body = "".join(f"    let x{i} = {i};\n" for i in range(90))
    node = {"main.rs": "fn main() {\n" + long_body + "}\n",
            "extra.rs": "\n" * 10 + "#[cfg(test)]\nmod tests {\n" + "\n" * 500 + "}\n"}
    crate(tmp, "packages/demo/core", "demo", core)
    crate(tmp, "packages/demo/node", "demo_node", node, 'r2r = "0.9"\ndemo = { path = "../core" }\n')
    (tmp / "Cargo.toml").write_text('[workspace]\nmembers = ["packages/demo/core", "packages/demo/node"]\n')
    (tmp / "Cargo.lock").write_text('version = 4\n\n[[package]]\nname = "demo"\nversion = "0.1.0"\n')
    return tmp


def test_metrics_finds_circles_long_functions_and_fat_nodes(tmp_path):
    repo = workspace(tmp_path / "with", circle=True)
    out = metrics(repo, "--check", "circles")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "import circles inside a crate: 1" in out.stdout, out.stdout
    assert "packages/demo/core/src/a.rs -> " in out.stdout and "beta" in out.stdout, out.stdout
    # The 92-line main is over 80 lines; the node layer counts its files without their test modules.
    assert "functions over 80 lines: 1" in out.stdout and "main  packages/demo/node/src/main.rs:1" in out.stdout
    layer = next(line for line in out.stdout.splitlines() if line.startswith("demo "))
    assert layer.split()[1:3] == ["8", str(92 + 10)], layer  # 3 + 3 + 2 core lines; 92 + 10 node lines
    assert metrics(repo, "--check", "functions").returncode == 1
    assert metrics(repo, "--check", "deps").returncode == 0

    repo = workspace(tmp_path / "without", circle=False)
    out = metrics(repo, "--check", "circles")
    assert out.returncode == 0 and "import circles inside a crate: 0" in out.stdout, out.stdout


def test_the_generated_graphs_section_is_written_then_up_to_date(tmp_path):
    repo = workspace(tmp_path / "ws", circle=False)
    doc = tmp_path / "CONTRIBUTING.md"
    doc.write_text("# Working here\n")
    assert metrics(repo, "--contributing", str(doc), "--check", "graphs").returncode == 1
    assert metrics(repo, "--contributing", str(doc), "--write").returncode == 0
    text = doc.read_text()
    assert "m_demo_node -.-> m_demo" in text and "m_a[a] --> m_b[b]" in text, text
    assert metrics(repo, "--contributing", str(doc), "--check", "graphs").returncode == 0
