"""The README's internal links land: every `(#anchor)` names a heading (GitHub's anchor rule) and
every image or file it links inside the project exists."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (not - or _), spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_internal_link_names_a_heading():
    outside_code = re.sub(r"```.*?```", "", README, flags=re.S)
    anchors = {github_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", outside_code, flags=re.M)}
    linked = set(re.findall(r"\]\(#([^)]+)\)", outside_code))
    assert linked, "the README links its own sections"
    assert linked <= anchors, sorted(linked - anchors)


def test_every_linked_project_file_exists():
    paths = {p for p in re.findall(r"\]\(((?:assets|tests|eqi_core|pages)/[^)#\s]+)\)", README)}
    assert any(p.startswith("assets/screenshots/") for p in paths)
    assert [p for p in paths if not (ROOT / p).exists()] == []


def test_anchor_rule_by_hand():
    assert github_anchor("Lab notebook: how the numbers were reached") == "lab-notebook-how-the-numbers-were-reached"
    assert github_anchor("The `eqi` command") == "the-eqi-command"
    assert github_anchor("From Python (a notebook)") == "from-python-a-notebook"
