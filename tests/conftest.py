"""Session-wide fixtures: a real PostgreSQL on loopback, started once for the tests that need it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.postgres import PostgresUnavailable, temp_postgres


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL cluster (Debian's server binaries); the test is skipped, saying why, without one."""
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        pytest.skip("PostgreSQL tests need asyncpg: pip install -e '.[postgres]'")
    try:
        with temp_postgres() as pg:
            yield pg.url
    except PostgresUnavailable as e:
        pytest.skip(f"PostgreSQL cannot start here: {e}")
