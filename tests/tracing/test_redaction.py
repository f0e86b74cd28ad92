"""`redact`'s shortcut (it skips the patterns for text none of them can match, most of a span's
text) changes nothing: checked against every pattern applied, on the shapes of credentials the
project's redaction tests use and on generated text built from the very fragments its patterns
look for, case-folding letters outside ASCII included."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph.redaction import MASK, _masked, redact
from graph.tracing.redaction import environment_secrets


def every_pattern(text: str, secrets: list[str]) -> str:
    """What `redact` gives with no shortcut: the secrets verbatim, then every pattern."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return _masked(text)


SHAPES = [
    "https://user:hunter22@api.example.com/v1",
    "connect to postgresql://app:pw-1234@db/prod failed",
    "https://api.example.com/v1?x=1&token=tok-99887766",
    "host=db password='Super Secret' dbname=prod",
    '{"api_key": "json-secret-1"}',
    "api-key: header-secret-9",
    "Authorization: Bearer eyJhbGciOi.payload.sig",
    "Authorization: Basic dXNlcjpwYXNz",
    "Incorrect API key provided: sk-proj-AbCdEf123456",
    "key sk-ant-api03-xyzxyzxyz was rejected",
    '{"usage": {"input_tokens": 12, "output_tokens": 3}}',
    "The weather in Paris is 18 °C and sunny.",
    "Token abcdef123456 expired",
    "SIGNATURE=abc",
    "credentıal=abc123",
    "ſecret=abc123",
    "\u212aey=abc123",
]
FRAGMENTS = [
    "key", "KEY", "token", "Token", "secret", "password", "passwd", "pwd", "sig", "auth",
    "credential", "Bearer", "basic", "sk-", "pk-", "rk-", "://", "@", "=", ":", '"', "'", " ",
    "\n", "_", "-", "abc123XYZ", "user", "pw", "host", "/", "?", "&", "{", "}", "é", "1234",
    "ı", "ſ", "\u212a", "credentıal", "ſecret",  # letters `re.IGNORECASE` folds to ASCII ones
]  # fmt: skip


@pytest.mark.parametrize("text", SHAPES)
def test_the_shortcut_agrees_with_redact_on_known_shapes(text: str) -> None:
    assert redact(text, []) == every_pattern(text, [])
    assert redact(text, ["hunter22", "Secret"]) == every_pattern(text, ["hunter22", "Secret"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=24).map("".join))
def test_the_shortcut_agrees_with_redact_on_generated_text(text: str) -> None:
    assert redact(text, ["abc123XYZ"]) == every_pattern(text, ["abc123XYZ"])
    assert redact(text, []) == every_pattern(text, [])


def test_secrets_are_read_from_secret_looking_variables_only() -> None:
    found = environment_secrets(
        {
            "OPENAI_API_KEY": "sk-abcdef123456",
            "AGENT_API_KEYS": "first-key-1234,second-key-5678",
            "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer tok-0987654321",
            "HOME": "/home/someone-long-enough",
            "MAX_TOKENS": "42",
        }
    )
    assert "sk-abcdef123456" in found
    assert {"first-key-1234", "second-key-5678", "tok-0987654321"} <= set(found)
    assert "/home/someone-long-enough" not in found
    assert "42" not in found  # too short to mask without masking ordinary text
