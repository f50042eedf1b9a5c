"""The documentation holds: every fenced Python example of README.md and docs/*.md runs as written, each in a fresh
Python in an empty folder, unless a `<!-- docs-test: skip (reason) -->` line just before its fence says why it
cannot run alone; and every relative link reaches its page and heading, on GitHub and in the mkdocs site alike.
Shell examples are not run."""

import re
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
SKIP_MARKER = re.compile(r"<!-- docs-test: skip \((?P<reason>[^)]+)\) -->")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # of the example's first code line in the page
    code: str
    skip_reason: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def python_examples(page: Path) -> list[Example]:
    text = page.read_text()
    examples = []
    for fence in FENCE.finditer(text):
        if fence.group(1) != "python":
            continue
        line_before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = SKIP_MARKER.fullmatch(line_before)
        line = text.count("\n", 0, fence.start(2)) + 1
        examples.append(Example(page, line, fence.group(2), marker["reason"] if marker else None))
    return examples


EXAMPLES = [example for page in PAGES for example in python_examples(page)]


def outside_fences(text: str) -> str:
    """`text` with its fenced blocks blanked (their lines kept, so line numbers still count)."""
    return FENCE.sub(lambda block: "\n" * block.group(0).count("\n"), text)


def test_the_pages_hold_runnable_examples_and_every_skip_says_why():
    skipped = [example for example in EXAMPLES if example.skip_reason]
    assert len(EXAMPLES) - len(skipped) >= 5, [example.where for example in EXAMPLES]
    # A marker anywhere else (a typo, a missing reason, no fence after it) would skip nothing: refuse it.
    markers = sum(
        line.lstrip().startswith("<!-- docs-test") for page in PAGES for line in page.read_text().splitlines()
    )
    assert markers == len(skipped), "a `docs-test:` comment is not `<!-- docs-test: skip (reason) -->` before a fence"


@pytest.mark.starts_processes
@pytest.mark.parametrize(
    "example",
    [
        pytest.param(
            example,
            id=example.where,
            marks=[pytest.mark.skip(reason=f"{example.where}: {example.skip_reason}")] if example.skip_reason else [],
        )
        for example in EXAMPLES
    ],
)
def test_example_runs(example: Example, tmp_path: Path):
    # Blank lines ahead of the code make a traceback's line numbers the page's.
    script = tmp_path / f"{example.page.name}.py"
    script.write_text("\n" * (example.line - 1) + example.code)
    result = subprocess.run([sys.executable, script.name], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"the example at {example.where} failed:\n{result.stderr[-3000:]}"


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def mkdocs_slug(heading: str) -> str:
    """The anchor mkdocs gives a heading (Python-Markdown's toc slugify): runs of spaces and hyphens become one."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def heading_text(markdown: str) -> str:
    """A heading as rendered: code marks, emphasis and link targets gone."""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown).replace("`", "").replace("*", "").strip()


def anchors(page: Path) -> set[str]:
    """The anchors a link may use: those GitHub and mkdocs both give (first heading of each name only)."""
    headings = [heading_text(heading) for heading in HEADING.findall(outside_fences(page.read_text()))]
    return {github_slug(heading) for heading in headings} & {mkdocs_slug(heading) for heading in headings}


def relative_links(page: Path) -> list[tuple[int, str]]:
    text = outside_fences(page.read_text())
    return [
        (text.count("\n", 0, link.start()) + 1, link.group(1))
        for link in LINK.finditer(text)
        if not re.match(r"[a-z]+:", link.group(1))
    ]


@pytest.mark.starts_processes
@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_relative_links_reach_their_page_and_heading(page: Path):
    broken = []
    for line, target in relative_links(page):
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.is_file():
            broken.append(f"{page.name}:{line}: {target} (no such file)")
        elif anchor and anchor not in anchors(destination):
            broken.append(f"{page.name}:{line}: {target} (no heading with that anchor on GitHub and in mkdocs)")
    assert not broken, broken


def test_every_page_is_in_the_site_navigation():
    navigation = (ROOT / "mkdocs.yml").read_text()
    listed = set(re.findall(r"^  - [^:]+: (\S+\.md)$", navigation, re.MULTILINE))
    assert listed == {page.name for page in PAGES[1:]}


def test_readme_stays_a_front_page():
    # The README holds what a newcomer needs first (the two commands, an example per door, what runs unmodified);
    # the rest belongs in the pages under docs/.
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    assert 'pip install -e ".[cpu]" && python -m npu_bridge_compat run --tf1 examples/ported/train.py' in readme
    assert 'pip install -e ".[cpu,test]" && python -m pytest -q' in readme
