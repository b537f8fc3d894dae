"""Checksums, environment and provenance records, and a byte-reproducible `.tar.gz` archive.

Nothing here records the time: rebuilding from identical files must give identical bytes, so
tar members carry mtime 0, root ownership without names and mode 0644, and the gzip header's
mtime and file name are blank.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import io
import os
import platform
import re
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import IO, Any

from selectlab.shards import atomic_write_bytes, sha256_file

MANIFEST_NAME = "MANIFEST.sha256"
REDACTED = "<redacted>"
UNKNOWN = "unknown"
# Columns and keys that measure the machine a job ran on (wall-clock time, speed, peak memory).
# Archived tables, Markdown tables and JSON records are stripped of them, so that two runs from
# the same inputs archive the same bytes; the full files stay in results/.
MEASURED_COLUMNS = ("latency_s", "tokens_per_s", "seconds", "setup_seconds",
                    "input_tokens_per_s", "output_tokens_per_s", "docs_per_s", "memory_gb",
                    "memory_kind", "peak_rss_gb", "peak_device_gb", "gpu_hours", "wall_hours")
_CELL_BORDER = re.compile(r"(?<!\\)\|")


def without_measurements(path: Path) -> bytes:
    """A member's bytes without MEASURED_COLUMNS (unchanged if it holds none)."""
    stripped = stripped_of_measurements(path)
    return Path(path).read_bytes() if stripped is None else stripped


def stripped_of_measurements(path: Path) -> bytes | None:
    """A file's bytes with MEASURED_COLUMNS dropped from a CSV table's columns, a Markdown
    table's columns or a JSON record's keys at any depth; None where there is nothing to drop
    (other file types are not read)."""
    strip = {".csv": _csv_without, ".md": _markdown_without, ".json": _json_without}
    if Path(path).suffix not in strip:
        return None
    return strip[Path(path).suffix](Path(path).read_bytes())


def _csv_without(raw: bytes) -> bytes | None:
    import pandas as pd

    if not raw.strip():
        return None
    frame = pd.read_csv(io.BytesIO(raw), dtype=str, keep_default_na=False)
    measured = [column for column in frame.columns if column in MEASURED_COLUMNS]
    if not measured:
        return None
    return frame.drop(columns=measured).to_csv(index=False, lineterminator="\n").encode()


def _markdown_without(raw: bytes) -> bytes | None:
    """Every pipe table's measured columns dropped (header, alignment row and cells)."""
    lines = raw.decode("utf-8").split("\n")
    changed, drop = False, set()
    for number, line in enumerate(lines):
        if not line.startswith("|"):
            drop = set()
            continue
        cells = _CELL_BORDER.split(line)[1:-1]
        if number == 0 or not lines[number - 1].startswith("|"):  # a table's header row
            drop = {i for i, cell in enumerate(cells) if cell.strip() in MEASURED_COLUMNS}
        if drop:
            kept = [cell for i, cell in enumerate(cells) if i not in drop]
            lines[number] = "|" + "|".join(kept) + "|"
            changed = True
    return "\n".join(lines).encode("utf-8") if changed else None


def _json_without(raw: bytes) -> bytes | None:
    import json

    def strip(value):
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items()
                    if key not in MEASURED_COLUMNS}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    record = json.loads(raw)
    stripped = strip(record)
    if stripped == record:
        return None
    return (json.dumps(stripped, indent=2, sort_keys=True) + "\n").encode("utf-8")


def manifest_text(checksums: Mapping[str, str]) -> str:
    """`sha256sum` format (digest, two spaces, path), sorted by path, so `sha256sum -c` works."""
    return "".join(f"{checksums[name]}  {name}\n" for name in sorted(checksums))


def write_checksums(root: Path, files: Iterable[Path]) -> Path:
    """Write `root/MANIFEST.sha256` for `files` (absolute, or relative to `root`)."""
    root = Path(root)
    checksums: dict[str, str] = {}
    for file in files:
        path = Path(file) if Path(file).is_absolute() else root / file
        relative = path.resolve().relative_to(root.resolve()).as_posix()
        if relative == MANIFEST_NAME:
            continue
        checksums[relative] = sha256_file(path)
    manifest = root / MANIFEST_NAME
    atomic_write_bytes(manifest, manifest_text(checksums).encode("utf-8"))
    return manifest


def installed_distributions() -> list[str]:
    """'name==version' for every installed distribution, like `pip freeze`, sorted by name."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"] if dist.metadata else None
        if not name:
            continue
        key = re.sub(r"[-_.]+", "-", name).lower()
        found.setdefault(key, f"{name}=={dist.version}")
    return [found[key] for key in sorted(found)]


def torch_record() -> list[str]:
    try:
        import torch
    except Exception:  # noqa: BLE001 - a broken torch install is as good as none here
        return ["torch: not importable"]
    lines = [f"torch: {torch.__version__}"]
    try:
        lines.append(f"torch cuda available: {torch.cuda.is_available()}")
        lines.append(f"torch cuda version: {torch.version.cuda}")
    except Exception as error:  # noqa: BLE001
        lines.append(f"torch cuda available: unknown ({type(error).__name__})")
    return lines


def environment_record() -> str:
    """Python, platform, torch/CUDA (when importable) and every installed distribution."""
    lines = [
        f"python: {platform.python_version()} ({platform.python_implementation()})",
        f"platform: {platform.platform()}",
        f"machine: {platform.machine()}",
        *torch_record(),
        "packages:",
        *installed_distributions(),
    ]
    return "\n".join(lines) + "\n"


def is_secret_key(key: str) -> bool:
    """True for keys naming credentials: api_key, secret, password, or a token.

    'token' inside 'tokens' or 'tokenizer'/'tokenize' names a count or the tokenizer, not a
    credential, so `budget_tokens` stays visible while `hf_token` and `token_env` are hidden.
    """
    lowered = key.lower()
    compact = re.sub(r"[^a-z0-9]", "", lowered)
    if "apikey" in compact or "secret" in lowered or "password" in lowered:
        return True
    return any(
        not lowered[m.end() :].startswith(("s", "iz", "is")) for m in re.finditer("token", lowered)
    )


def redact(value: Any) -> Any:
    """A copy of a config with every secret-named key's value replaced by '<redacted>'."""
    if isinstance(value, Mapping):
        return {str(k): REDACTED if is_secret_key(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    return value


def _git(repo_dir: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo_dir), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_state(repo_dir: Path) -> dict[str, Any]:
    """Commit and dirtiness (untracked, non-ignored files count); 'unknown' outside a checkout."""
    commit = _git(repo_dir, "rev-parse", "HEAD")
    if commit is None:
        return {"commit": UNKNOWN, "dirty": UNKNOWN}
    status = _git(repo_dir, "status", "--porcelain")
    dirty: bool | str = UNKNOWN if status is None else bool(status.strip())
    return {"commit": commit.strip(), "dirty": dirty}


def provenance_record(
    resolved_config: dict, input_checksums: dict[str, str], repo_dir: Path,
    corpus_inputs: dict | None = None,
) -> dict:
    """Git state, the redacted resolved config and input checksums; nothing time-dependent.

    `corpus_inputs`: what the embedded corpus was built from (packages, versions, checksums;
    selectlab.corpus.inputs), where it was built.
    """
    record = {
        "git": git_state(Path(repo_dir)),
        "config": redact(resolved_config),
        "inputs": {name: input_checksums[name] for name in sorted(input_checksums)},
    }
    if corpus_inputs is not None:
        record["corpus_inputs"] = corpus_inputs
    plugins = plugin_sources(resolved_config)
    if plugins:
        record["plugins"] = plugins
    return record


def plugin_sources(config: dict) -> dict:
    """Your own families' and methods' files (selectlab.plugins), checksummed and copied in,
    so an archive handed over carries the code its rows were selected with."""
    from selectlab.config import plugin_entries
    from selectlab.plugins.loading import is_file_module

    sources = {}
    for (section, name), entry in sorted(plugin_entries(config).items()):
        module = entry["module"]
        record = {"module": module}
        if is_file_module(module):
            record |= {"sha256": sha256_file(Path(module)), "source": Path(module).read_text()}
        sources[f"{section}.{name}"] = record
    return sources


def _check_member_name(name: str) -> str:
    posix = PurePosixPath(name)
    if not name or posix.is_absolute() or ".." in posix.parts or "\\" in name:
        raise ValueError(f"archive member name must be a relative path inside it: {name!r}")
    return posix.as_posix()


def _tar_info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


class _HashingReader:
    """Hashes what tarfile reads, to catch a file that changed after the manifest was made."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self.digest.update(data)
        return data


def build_archive(out_path: Path, members: dict[str, Path | bytes]) -> None:
    """Deterministic `.tar.gz` of `members` (archive name -> file, or the member's bytes)
    plus `MANIFEST.sha256`.

    Members are sorted by name; the manifest covers every other member. The archive is written
    to a temporary file beside `out_path` and renamed into place.
    """
    names = {_check_member_name(name): content if isinstance(content, bytes) else Path(content)
             for name, content in members.items()}
    if len(names) != len(members):
        raise ValueError("two archive member names normalise to the same path")
    if MANIFEST_NAME in names:
        raise ValueError(f"{MANIFEST_NAME} is written by build_archive; do not pass it")
    checksums = {name: hashlib.sha256(content).hexdigest() if isinstance(content, bytes)
                 else sha256_file(content) for name, content in names.items()}
    sizes = {name: len(content) if isinstance(content, bytes) else content.stat().st_size
             for name, content in names.items()}
    manifest = manifest_text(checksums).encode("utf-8")

    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=out_path.parent, prefix=f".{out_path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zipped:
                with tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    for name in sorted([*names, MANIFEST_NAME]):
                        if name == MANIFEST_NAME:
                            tar.addfile(_tar_info(name, len(manifest)), io.BytesIO(manifest))
                            continue
                        if isinstance(names[name], bytes):
                            tar.addfile(_tar_info(name, sizes[name]), io.BytesIO(names[name]))
                            continue
                        with open(names[name], "rb") as handle:
                            reader = _HashingReader(handle)
                            tar.addfile(_tar_info(name, sizes[name]), reader)
                        if reader.digest.hexdigest() != checksums[name]:
                            raise RuntimeError(f"{names[name]} changed while being archived")
            raw.flush()
            os.fsync(raw.fileno())
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, out_path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
