"""`graph.redaction.redact`: the one place that keeps credentials out of messages, and
`describe`, which shows a checkpointer URL without its password."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph.persistence.savers import describe
from graph.redaction import MASK, redact


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("https://user:hunter22@api.example.com/v1", "hunter22"),
        (
            "https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        ),
        ("postgresql://app:s3cr%40t@db:5432/prod", "s3cr%40t"),
        ("connect to postgresql://app:pw-1234@db/prod failed", "pw-1234"),
        ("https://api.example.com/v1?api_key=abcd1234&x=1", "abcd1234"),
        ("https://api.example.com/v1?x=1&token=tok-99887766", "tok-99887766"),
        ("https://api.example.com/v1?access_token=zz99zz99", "zz99zz99"),
        ("host=db user=app password=plainpass dbname=prod", "plainpass"),
        ("host=db password='Super Secret' dbname=prod", "Super Secret"),
        ('host=db password="Super Secret" dbname=prod', "Super Secret"),
        ("dbname=prod sslpassword=keypass1", "keypass1"),
        ('{"api_key": "json-secret-1"}', "json-secret-1"),
        ("api-key: header-secret-9", "header-secret-9"),
        ("Authorization: Bearer eyJhbGciOi.payload.sig", "eyJhbGciOi.payload.sig"),
        ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ("Incorrect API key provided: sk-proj-AbCdEf123456", "sk-proj-AbCdEf123456"),
        ("key sk-ant-api03-xyzxyzxyz was rejected", "sk-ant-api03-xyzxyzxyz"),
    ],
)
def test_known_secret_shapes_are_masked(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert MASK in out


def test_a_given_secret_is_masked_verbatim_wherever_it_appears() -> None:
    text = 'unexpected spaces found in "postgresql://app:Super Secret@db/prod"'
    out = redact(text, ["Super Secret"])
    assert "Super Secret" not in out and "Secret" not in out
    # and a secret with no recognisable shape, in plain prose
    assert redact("the value was correcthorsebattery.", ["correcthorsebattery"]) == (
        f"the value was {MASK}."
    )


def test_a_password_with_spaces_in_a_url_is_masked_even_without_being_given() -> None:
    text = 'unexpected spaces found in "postgresql://app:Super Secret@db/prod", use %20'
    out = redact(text)
    assert "Secret" not in out and "Super" not in out
    assert "db/prod" in out


def test_short_or_empty_secrets_are_ignored() -> None:
    assert redact("a b c", ["", None, "b"]) == "a b c"


def test_ordinary_text_is_left_alone() -> None:
    for text in (
        "Could not reach the model endpoint http://127.0.0.1:8000/v1: Connection refused",
        'password authentication failed for user "postgres"',
        'connection to server at "127.0.0.1", port 1 failed: Connection refused',
        "The tokenizer splits words; keys are sorted.",
        "risk-free and task-oriented",
    ):
        assert redact(text) == text


def test_non_strings_are_rendered_first() -> None:
    assert "pw99pw99" not in redact(ValueError("postgresql://u:pw99pw99@h/d"))


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://postgres@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test"),
        ("postgresql://app:hunter22@db:5432/prod", "postgresql://app:***@db:5432/prod"),
        ("postgresql://app:Super Secret@db/prod", "postgresql://app:***@db/prod"),
        ("postgresql://app:p%40ss@db/prod", "postgresql://app:***@db/prod"),
        ("postgresql://:onlypass@db/prod", "postgresql://:***@db/prod"),
        ("sqlite:////tmp/x.sqlite", "sqlite:////tmp/x.sqlite"),
        ("memory", "memory"),
    ],
)
def test_describe_never_shows_a_password(url: str, shown: str) -> None:
    assert describe(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app@db/prod?password=qsecret1",
        "postgresql://app@db/prod?sslmode=require&sslpassword=qsecret1",
        "postgresql://app:qsecret1@db/prod?password=qsecret1",
        "host=db user=app password=qsecret1",
        "host=db user=app password='qsecret1 with space'",
    ],
)
def test_describe_masks_passwords_in_query_strings_and_dsns(url: str) -> None:
    assert "qsecret1" not in describe(url)


_NAMES = st.sampled_from(
    ["key", "Token", "api_key", "x-api-key", "pwd", "auth", "name", "a-b", "ſecret", "credentıal"]
)
_FILLER = st.sampled_from(
    [" ", "  ", "\n", '"', "'", "&", ",", ";", "}", "{", "-", "Bearer ", "abc", "sk-", "?", "="]
)  # fmt: skip
# a name, maybe quoted, maybe spaced, its separator and a value (quoted or not)
_PAIR = st.tuples(
    _NAMES,
    st.sampled_from(["", '"', "'"]),
    st.sampled_from(["", " ", "  "]),
    st.sampled_from(["=", ":"]),
    st.sampled_from(["", " "]),
    st.sampled_from(["v", '"q v"', "'q'", "Bearer t0k", "a=b", "x:y", "", "token=z"]),
).map("".join)
_PIECES = st.one_of(_PAIR, _FILLER, _NAMES)


@given(st.lists(_PIECES, max_size=40).map("".join))
@settings(max_examples=400, deadline=None)
def test_the_pair_scan_finds_what_the_pair_pattern_finds(text: str) -> None:
    """The one-pass scan of secret `name=value` pairs masks exactly what the pattern applied
    at every position masks (the scan only skips the places no pair can start)."""
    from graph.redaction import _SECRET_PAIR, _mask_pair, _mask_pairs

    assert _mask_pairs(text) == _SECRET_PAIR.sub(_mask_pair, text)
