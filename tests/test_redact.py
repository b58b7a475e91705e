"""Secret redaction: the values of the key variables a config reads never reach a written file."""

import json

from pos_bench.redact import redactor_for
from pos_bench.transcript import Transcript, write_result

OPENAI = {"_target_": "pos_bench.models.openai.OpenAIModel", "model": "m"}


def test_the_named_variable_and_the_default_one_are_redacted():
    environ = {"MY_KEY": "sk-named-0123456789", "OPENAI_API_KEY": "sk-default-0123456789", "HOME": "/root/x"}
    named = redactor_for({"model": {**OPENAI, "api_key_env": "MY_KEY"}}, environ)
    assert named.text("echo sk-named-0123456789!") == "echo [redacted $MY_KEY]!"
    default = redactor_for({"model": OPENAI}, environ)
    assert default.text("sk-default-0123456789") == "[redacted $OPENAI_API_KEY]"
    assert default.text("/root/x") == "/root/x"  # not a credential


def test_credential_looking_variables_are_redacted_and_short_values_are_not():
    redactor = redactor_for({}, {"HF_TOKEN": "hf_abcdefghijkl", "X_API_KEY": "short"})
    assert redactor.value({"a": ["hf_abcdefghijkl"], "hf_abcdefghijkl": 1}) == {
        "a": ["[redacted $HF_TOKEN]"],
        "[redacted $HF_TOKEN]": 1,
    }
    assert redactor.text("short") == "short"


def test_transcripts_and_results_are_written_redacted(tmp_path):
    redactor = redactor_for(
        {"model": {**OPENAI, "api_key_env": "MY_KEY"}}, {"MY_KEY": "sk-secret-0123456789"}
    )
    log = Transcript(tmp_path / "events.jsonl", redactor=redactor)
    log.write("call_error", error="401: Incorrect API key provided: Bearer sk-secret-0123456789")
    log.close()
    write_result(tmp_path / "result.json", {"error": "sk-secret-0123456789"}, redactor)
    for name in ("events.jsonl", "result.json"):
        text = (tmp_path / name).read_text()
        assert "sk-secret" not in text and "[redacted $MY_KEY]" in text
    assert json.loads((tmp_path / "result.json").read_text()) == {"error": "[redacted $MY_KEY]"}
