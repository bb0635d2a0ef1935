"""Every ```python block of docs/python runs as written (blocks of one page
share a namespace, in page order)."""

import os
import pathlib
import re

import pytest

DOCS = pathlib.Path(os.environ.get("KFACTOR_SOURCE_DIR", pathlib.Path(__file__).parents[2])) / "docs" / "python"
PAGES = sorted(DOCS.glob("*.md"))


def blocks(page):
    return re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)


def test_the_pages_exist():
    assert {p.name for p in PAGES} >= {"README.md", "quickstart.md", "nmf.md", "als.md"}


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)], ids=lambda p: p.name)
def test_code_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for code in blocks(page):
        exec(compile(code, str(page), "exec"), namespace)
