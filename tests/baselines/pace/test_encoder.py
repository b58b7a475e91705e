"""PACE's default relevance encoder is a real sentence encoder that runs offline (SPEC-BASE §5.4)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest

from baselines.pace.encoder import HashingEncoder, MiniLMEncoder, relevance_margin
from baselines.pace.method import Pace
from pos_bench.models.scripted import ScriptedModel

PAIRS = json.loads((Path(__file__).parent / "relevance_pairs.json").read_text(encoding="utf-8"))["pairs"]


@pytest.fixture(scope="module")
def minilm():
    encoder = MiniLMEncoder()
    yield encoder
    encoder.close()


def test_the_fixture_is_twenty_pairs_or_more_half_relevant():
    assert len(PAIRS) >= 20 and sum(p["relevant"] for p in PAIRS) * 2 == len(PAIRS)


def test_the_default_encoder_separates_relevant_from_irrelevant_steps_by_at_least_0_15(minilm):
    result = relevance_margin(minilm, PAIRS)
    assert result.margin >= 0.15, result
    assert relevance_margin(HashingEncoder(), PAIRS).margin < result.margin


def test_it_reads_only_installed_files(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the encoder tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    encoder = MiniLMEncoder()
    out = encoder.embed(["heat the mug", "You heat the mug 2 using the microwave 1."])
    assert out.vectors.shape == (2, 384) and out.tokens > 0
    assert np.allclose(np.linalg.norm(out.vectors, axis=1), 1.0)


def test_it_records_the_model_and_the_weights_hash(minilm):
    info = minilm.describe()
    assert info["model"].startswith("all-MiniLM-L6-v2") and len(info["weights_sha256"]) == 64


def test_other_weights_must_exist(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        MiniLMEncoder(model_path=str(tmp_path / "missing.onnx")).embed(["x"])


def test_pace_uses_it_unless_a_test_names_another():
    with Pace(ScriptedModel()) as method:
        assert isinstance(method.encoder, MiniLMEncoder)


def test_loading_it_sends_nothing_to_anyone(tmp_path):
    """onnxruntime alone reports to Microsoft ~9 s after it is loaded; with the encoder loaded and used, a proxy the
    environment names for every https host sees no request in 15 s."""
    import os
    import subprocess
    import sys
    import time

    from tests.conftest import REPO
    from tests.proxies import naming, recording_proxy

    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    code = (
        "import time\n"
        "from baselines.pace.encoder import MiniLMEncoder\n"
        "assert MiniLMEncoder().embed(['hello']).vectors.shape[0] == 1\n"
        "time.sleep(15)\n"
    )
    with recording_proxy() as (proxy, seen):
        env.update(naming(proxy))
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, timeout=120)
        assert time.monotonic() - started >= 15
    assert seen == []
