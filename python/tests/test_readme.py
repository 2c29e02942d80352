"""Every Python block of the README and the guide that uses the package runs as written, in a
scratch folder, against the installed package (the other blocks are run by tests/docs.rs)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "python" / "README.md", *sorted((ROOT / "docs" / "src").glob("*.md"))]
FENCE = re.compile(r"^```(python|py)\n(.*?)^```", re.M | re.S)


def blocks():
    for page in PAGES:
        if not page.exists():
            continue
        text = page.read_text()
        for m in FENCE.finditer(text):
            if "forge_flocks" in m.group(2):
                line = text[: m.start()].count("\n") + 1
                yield pytest.param(m.group(2), id=f"{page.relative_to(ROOT)}:{line}")


@pytest.mark.parametrize("code", list(blocks()))
def test_block_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<readme block>", "exec"), {"__name__": "__readme__"})


def test_the_readme_has_a_python_example():
    assert any("README.md:" in p.id and "python/" not in p.id for p in blocks())
