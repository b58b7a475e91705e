"""Secret redaction: the values of the key variables a config reads never reach a written file."""

import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pos_bench import events
from pos_bench.models.openai import OpenAIModel
from pos_bench.redact import (
    NO_SECRETS,
    Redactor,
    env_setting_problems,
    key_variables,
    redactor_for,
    scrub_http_logs,
    scrub_urls,
)
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
    log.write(events.CallError(error="401: Incorrect API key provided: Bearer sk-secret-0123456789"))
    log.close()
    write_result(tmp_path / "result.json", {"error": "sk-secret-0123456789"}, redactor)
    for name in ("events.jsonl", "result.json"):
        text = (tmp_path / name).read_text()
        assert "sk-secret" not in text and "[redacted $MY_KEY]" in text
    assert json.loads((tmp_path / "result.json").read_text()) == {"error": "[redacted $MY_KEY]"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
secrets = st.text(min_size=8, max_size=16).filter(
    lambda s: s.strip() == s and s not in "[redacted $PLANTED_KEY]"
)


class Shown:
    """A value JSON cannot hold; written as its `str`."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from strings(inner)


@settings(max_examples=300, deadline=None)
@given(data=json_values, secret=secrets, where=st.integers(0, 3), ascii_only=st.booleans())
def test_json_text_is_the_walked_redaction_and_never_holds_the_secret(data, secret, where, ascii_only):
    redactor = Redactor((("PLANTED_KEY", secret),))
    planted = [data, f"echo {secret}!", {f"k{secret}": secret}, [Shown(f"<{secret}>")]][where]
    text = redactor.json_text(planted, default=str, ensure_ascii=ascii_only)
    # every string is redacted (a number that happens to hold the digits of a secret is not a string)
    assert not any(secret in s for s in strings(json.loads(text)))
    expected = redactor.value(json.loads(json.dumps(planted, default=str)))
    assert json.loads(text) == expected


def test_json_text_without_secrets_is_plain_json():
    assert NO_SECRETS.json_text({"a": [1, "b"]}) == json.dumps({"a": [1, "b"]})


@pytest.mark.parametrize("ascii_only", [True, False])
def test_a_secret_that_json_escapes_is_still_found_and_a_text_without_it_is_left_as_written(ascii_only):
    secret = 'k\u00e9y"\tzw\U0001f511-long'  # a quote, a tab; é, a key emoji with ensure_ascii
    redactor = Redactor((("PLANTED_KEY", secret),))
    text = redactor.json_text({"echo": f"<{secret}>", "n": 1.5}, ensure_ascii=ascii_only)
    assert json.loads(text) == {"echo": "<[redacted $PLANTED_KEY]>", "n": 1.5}
    plain = {"other": "k\u00e9y", "n": 1.5}
    assert redactor.json_text(plain, ensure_ascii=ascii_only) == json.dumps(plain, ensure_ascii=ascii_only)


URL_SECRET = "s3cr3tQ"


def test_url_credentials_are_scrubbed_by_pattern_whatever_their_length():
    line = 'HTTP Request: POST http://ann:pw@h:1/v1/chat?api-key=ab&Signature=xy&limit=5 "HTTP/1.1 200 OK"'
    assert scrub_urls(line) == (
        "HTTP Request: POST http://[redacted]@h:1/v1/chat?api-key=[redacted]&Signature=[redacted]&limit=5 "
        '"HTTP/1.1 200 OK"'
    )
    assert scrub_urls("no url, a key=value and user:pw@host") == "no url, a key=value and user:pw@host"


def test_url_credentials_in_the_config_are_secrets_of_the_run():
    url = f"http://user:{URL_SECRET}@127.0.0.1:9/v1?api-key=secret&token=ab&page=2"
    redactor = redactor_for({"model": {**OPENAI, "base_url": url, "api_key_env": None}}, {})
    out = redactor.text(f"POST {url}/chat failed: {URL_SECRET} / page=2")
    assert URL_SECRET not in out and "secret" not in out and "token=ab" not in out
    assert "page=2" in out and "127.0.0.1:9/v1" in out


def test_a_proxys_credentials_are_secrets_of_the_run():
    environ = {
        "HTTPS_PROXY": f"http://proxy-user:{URL_SECRET}@proxy.example:3128",
        "http_proxy": "ann:pw@proxy.example:3128",  # no scheme: http:// as httpx reads it
        "NO_PROXY": "localhost",
    }
    redactor = redactor_for({}, environ)
    out = redactor.text(f"via {environ['HTTPS_PROXY']} ({URL_SECRET}) or {environ['http_proxy']}")
    assert URL_SECRET not in out and "proxy-user" not in out and "ann:pw@" not in out
    assert "[redacted $HTTPS_PROXY]" in out and "[redacted $http_proxy]" in out
    assert "proxy.example:3128" in out and redactor_for({}, {"ALL_PROXY": "http://p:3128"}).secrets == ()


def test_a_key_pasted_into_an_env_setting_is_refused_unrepeated_and_redacted():
    pasted = "sk-proj-Abc123-pasted"
    cfg = {"model": {**OPENAI, "api_key_env": pasted}, "roles": {"judge": {"token_env": "JUDGE_TOKEN"}}}
    (problem,) = env_setting_problems(cfg)
    assert (
        problem.startswith("model.api_key_env: must name an environment variable") and pasted not in problem
    )
    assert pasted not in list(key_variables(cfg))  # never looked up in the environment, so never echoed
    assert (
        redactor_for(cfg, {}).text(f"variable {pasted} unset")
        == "variable [redacted $model.api_key_env] unset"
    )
    with pytest.raises(ValueError, match="not hold the key") as raised:
        OpenAIModel("m", api_key_env=pasted)
    assert pasted not in str(raised.value)


def test_the_http_clients_request_log_is_scrubbed(caplog):
    scrub_http_logs()
    with caplog.at_level(logging.INFO, logger="httpx2"):  # inspect_ai, once loaded, sets it to WARNING
        logging.getLogger("httpx2").info("HTTP Request: %s %s", "POST", f"http://u:{URL_SECRET}@h/v1?key=abc")
    assert (
        URL_SECRET not in caplog.text
        and "key=abc" not in caplog.text
        and "http://[redacted]@h" in caplog.text
    )
