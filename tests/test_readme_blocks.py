"""Every example in the README and the manual runs as written; so do the docstrings' examples.

Each fenced ``python`` or ``bash`` block of README.md and of every page under
``docs/`` runs in a fresh temporary folder with its own ``HOME`` and vault
(``$AGENT_MEM_VAULT``), with this environment's ``agent-mem-vault`` first on
``PATH``:

* a ``python`` block saved as a file and run as a reader runs a script,
  ``python block.py`` (so top-level ``await`` fails here as it would there);
* a ``bash`` block saved as a file and run as ``bash -e block.sh``.

A block that cannot run here (the install command, the test suite itself, a
server that runs until stopped, a machine the reader has and we do not) or
that is deliberately a fragment says so in an HTML comment on the line just
above its fence, with a reason (``readme:`` and ``docs:`` are the same)::

    <!-- readme: not run — starts a server that runs until stopped -->
    <!-- docs: fragment — continues the example above -->

A block that shows part of a file of the project names the file instead, and
must appear in it line for line, so the page cannot drift from the file that
is run (``docs/examples/operator_client.py`` runs in ``test_docs_examples.py``)::

    <!-- docs: excerpt — docs/examples/operator_client.py -->

Blocks are found anew on every run, so blocks other sections add are run too.
A failure names the page and the line of the block's opening fence.
"""

from __future__ import annotations

import doctest
import importlib
import os
import pkgutil
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import agent_mem_vault

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
"""The README and every page of the manual."""
TIMEOUT = 120.0
"""Seconds one block may take (a CLI call is well under one)."""

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_MARKER = re.compile(
    r"^<!--\s*(?:readme|docs):\s*(?P<kind>not run|fragment|excerpt)\s*(?P<rest>.*?)\s*-->\s*$"
)
_REASON = re.compile(r"^[—–:-]+\s*(?P<reason>\S.*)$")
RUNNABLE = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}


@dataclass(frozen=True)
class Block:
    line: int
    """Line of the opening fence in its page (1-based)."""
    language: str
    code: str
    marker: str | None
    """``not run``, ``fragment`` or ``excerpt`` when marked, else None."""
    reason: str | None
    page: str = "README.md"
    """The page's path from the repository's root."""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.language or 'text'}"


def readme_blocks(text: str, page: str = "README.md") -> list[Block]:
    """Every fenced block of ``text``, with the marker on the line above its fence."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence = opening["fence"]
        language = opening["info"].strip().split(" ")[0].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j])
            j += 1
        above = lines[i - 1].strip() if i > 0 else ""
        marker = _MARKER.match(above)
        reason = None
        if marker is not None:
            found = _REASON.match(marker["rest"])
            reason = found["reason"] if found else None
        blocks.append(
            Block(
                line=i + 1,
                language=language,
                code="\n".join(body) + "\n",
                marker=marker["kind"] if marker else None,
                reason=reason,
                page=page,
            )
        )
        i = j + 1
    return blocks


BLOCKS = [
    block
    for page in PAGES
    for block in readme_blocks(page.read_text(encoding="utf-8"), page.relative_to(ROOT).as_posix())
]
TO_RUN = [b for b in BLOCKS if b.language in RUNNABLE and b.marker is None]


def isolated_env(tmp: Path) -> dict[str, str]:
    """A temporary HOME and vault, and this environment's tools first on PATH."""
    home = tmp / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENT_MEM_VAULT", "OPENAI_", "AMV_")) and k != "PYTHONPATH"
    }
    env.update(
        HOME=str(home),
        AGENT_MEM_VAULT=str(tmp / "vault"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def run_block(block: Block, tmp: Path) -> subprocess.CompletedProcess[str]:
    work = tmp / "work"
    work.mkdir()
    # Each block is a file, run as a reader runs one: no wrapper of the suite's own.
    if RUNNABLE[block.language] == "python":
        script = tmp / "block.py"
        script.write_text(block.code, encoding="utf-8")
        command = [sys.executable, str(script)]
    else:
        script = tmp / "block.sh"
        script.write_text(block.code, encoding="utf-8")
        command = ["bash", "-e", str(script)]
    return subprocess.run(
        command,
        cwd=work,
        env=isolated_env(tmp),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("block", TO_RUN, ids=lambda b: b.id)
def test_every_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    try:
        proc = run_block(block, tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.id}: the block ran for more than {TIMEOUT:g}s")
    assert proc.returncode == 0, (
        f"{block.id} failed (exit {proc.returncode}):\n--- block ---\n{block.code}"
        f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
    )


def test_every_block_that_is_not_run_says_why() -> None:
    for block in BLOCKS:
        if block.marker is not None:
            assert block.reason, (
                f"{block.id}: a '<!-- readme: {block.marker} -->' marker needs a reason, "
                f"e.g. '<!-- readme: {block.marker} — starts a server that runs until stopped -->'"
            )


def test_the_manual_has_pages_and_runnable_blocks() -> None:
    """A guard on the search for pages: the manual is found, and some of its blocks run."""
    pages = {b.page for b in TO_RUN}
    for page in ("docs/vault.md", "docs/harness.md", "docs/runs.md", "docs/configuration.md"):
        assert page in pages, f"no runnable block found in {page}"


EXCERPTS = [b for b in BLOCKS if b.marker == "excerpt"]


@pytest.mark.parametrize("block", EXCERPTS, ids=lambda b: b.id)
def test_every_excerpt_is_in_the_file_it_names(block: Block) -> None:
    assert block.reason is not None
    source = ROOT / block.reason.split()[0]
    assert source.is_file(), f"{block.id}: names {source}, which does not exist"
    assert block.code in source.read_text(encoding="utf-8"), (
        f"{block.id}: the block is not a part of {block.reason.split()[0]} as it is now; "
        "copy the lines from the file again"
    )


def test_the_readme_has_runnable_blocks_in_every_face() -> None:
    """A guard on the parser: the harness, vault and runs examples are found and run."""
    code = "".join(b.code for b in TO_RUN if b.page == "README.md")
    for needle in ("agent_mem_vault.harness", "agent-mem-vault create", "RunRegistry"):
        assert needle in code, f"no runnable README block contains {needle!r}"


def test_a_marker_is_read_from_the_line_above_the_fence() -> None:
    text = (
        "<!-- readme: not run — needs a server -->\n```bash\nserve\n```\n\n```python\nx = 1\n```\n"
    )
    marked, plain = readme_blocks(text)
    assert (marked.marker, marked.reason, marked.line) == ("not run", "needs a server", 2)
    assert (plain.marker, plain.language, plain.code) == (None, "python", "x = 1\n")
    (excerpt,) = readme_blocks("<!-- docs: excerpt — docs/x.py -->\n```python\ny = 2\n```\n")
    assert (excerpt.marker, excerpt.reason) == ("excerpt", "docs/x.py")


def _modules_with_examples() -> list[str]:
    """Every module of the package whose docstrings hold ``>>>`` examples."""
    names = [agent_mem_vault.__name__]
    for info in pkgutil.walk_packages(agent_mem_vault.__path__, f"{agent_mem_vault.__name__}."):
        names.append(info.name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    return sorted(
        name
        for name in names
        if any(t.examples for t in finder.find(importlib.import_module(name), name))
    )


@pytest.mark.parametrize("name", _modules_with_examples())
def test_module_docstring_examples_run(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AGENT_MEM_VAULT", str(tmp_path / "vault"))
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(module, name) if t.examples]
    out: list[str] = []
    for test in tests:
        runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)


def test_a_block_runs_as_a_file_so_top_level_await_fails_as_it_would_for_a_reader(
    tmp_path: Path,
) -> None:
    block = Block(line=1, language="python", code="import asyncio\nawait asyncio.sleep(0)\n",
                  marker=None, reason=None)  # fmt: skip
    proc = run_block(block, tmp_path)
    assert proc.returncode != 0 and "'await' outside function" in proc.stderr
