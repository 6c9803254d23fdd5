"""Fixtures of the security tests: throwaway certificates, made once per test run."""

from __future__ import annotations

import pytest

from tests.server.certs import Pki, make_pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A test CA with server and client certificates, and an untrusted CA's client."""
    return make_pki(tmp_path_factory.mktemp("pki"))
