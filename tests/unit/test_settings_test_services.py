"""The probe that decides whether service tests run or skip (tests/conftest.py).

A machine with nothing on 127.0.0.1:5432 must see skips with a reason, never failures; the
probe's address follows REACT_AGENT_TEST_POSTGRES / REACT_AGENT_TEST_REDIS.
"""

from __future__ import annotations

import socket

from tests.conftest import listening, service_problem, service_url


def closed_port() -> int:
    """A port nothing listens on: bound, then released."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_closed_port_is_not_listening() -> None:
    assert not listening("127.0.0.1", closed_port(), timeout=0.2)


def test_an_open_port_is_listening() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert listening("127.0.0.1", server.getsockname()[1])


def test_a_missing_postgres_gives_the_reason_and_the_variable() -> None:
    port = closed_port()
    env = {"REACT_AGENT_TEST_POSTGRES": f"postgresql://postgres@127.0.0.1:{port}/test"}
    assert service_problem("postgres", env) == (
        f"postgres needs a server at 127.0.0.1:{port} and nothing listens there "
        "(set REACT_AGENT_TEST_POSTGRES)"
    )


def test_a_missing_redis_gives_the_reason_and_the_variable() -> None:
    port = closed_port()
    reason = service_problem("redis", {"REACT_AGENT_TEST_REDIS": f"redis://127.0.0.1:{port}/0"})
    assert reason is not None and f"127.0.0.1:{port}" in reason
    assert "REACT_AGENT_TEST_REDIS" in reason


def test_a_listening_service_has_no_problem() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        url = f"postgresql://postgres@127.0.0.1:{server.getsockname()[1]}/test"
        assert service_problem("postgres", {"REACT_AGENT_TEST_POSTGRES": url}) is None


def test_the_default_addresses_are_the_local_ones() -> None:
    assert service_url("postgres", {}) == "postgresql://postgres@127.0.0.1:5432/test"
    assert service_url("redis", {}) == "redis://127.0.0.1:6379/0"
