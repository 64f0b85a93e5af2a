"""Every text file the project opens names its encoding.

A native library (llvmlite, when numba compiles on the UMAP warm-up thread) sets the whole process's
LC_CTYPE to "C" for moments; a file opened then with the locale's encoding read UTF-8 as ASCII and
failed (a fresh-clone CI run, 2026-11-27). So no ``open``, ``read_text`` or ``write_text`` in the
project's code may rely on the locale, nor may a subprocess's pipes decoded as text
(``text=True``)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def locale_dependent_calls(source: str) -> list[int]:
    """Lines of text-mode ``open(...)``, ``.read_text()``, ``.write_text(x)`` and calls with ``text=True``
    (subprocess pipes) without ``encoding=``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or any(k.arg == "encoding" for k in node.keywords):
            continue
        f = node.func
        pipes_as_text = any(k.arg in ("text", "universal_newlines") and isinstance(k.value, ast.Constant)
                            and k.value.value is True for k in node.keywords)
        text_file = isinstance(f, ast.Attribute) and (f.attr == "read_text" and not node.args
                                                      or f.attr == "write_text" and len(node.args) == 1)
        if pipes_as_text or text_file:
            found.append(node.lineno)
        elif isinstance(f, ast.Name) and f.id == "open":
            mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            if mode is None or isinstance(mode, ast.Constant) and "b" not in str(mode.value):
                found.append(node.lineno)
    return found


def test_the_check_finds_what_it_should_by_hand():
    source = ('open(p)\nopen(p, "rb")\nopen(p, "w", encoding="utf-8")\nopen(p, mode="a")\n'
              'p.read_text()\np.read_text(encoding="utf-8")\np.write_text(s)\np.write_text(s, "utf-8")\n'
              'run(c, text=True)\nrun(c, text=True, encoding="utf-8")\nrun(c, text=False)\n')
    assert locale_dependent_calls(source) == [1, 4, 5, 7, 9]


def test_no_text_io_depends_on_the_locale():
    files = [*ROOT.glob("eqi_core/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py", *ROOT.glob("tests/**/*.py")]
    offenders = {str(p.relative_to(ROOT)): lines for p in files
                 if (lines := locale_dependent_calls(p.read_text(encoding="utf-8")))}
    assert not offenders, f"text I/O without encoding= (add encoding=\"utf-8\"): {offenders}"
