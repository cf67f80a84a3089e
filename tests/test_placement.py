"""The PostgreSQL + Redis pass repeats a test by what the test uses (tests/fixtures/placement.py):
a suite of its own, collected with `-m backend`, shows which tests that is."""

from __future__ import annotations

import pytest

CONFTEST = """
import pytest
from tests.fixtures.placement import place

PG_URL = REDIS_URL = None


@pytest.fixture
def database_url():
    return "sqlite://"


@pytest.fixture
def engine(database_url):
    return database_url


@pytest.fixture
def reads_redis_url():
    return REDIS_URL


@pytest.fixture
def plain():
    return 1


def pytest_collection_modifyitems(items):
    place(items)
"""

TESTS = """
import conftest
import pytest


def test_pure(plain):
    pass


def test_through_the_engine(engine):
    pass


def test_through_a_fixture_that_names_the_setting(reads_redis_url):
    pass


def test_naming_it_in_its_own_code():
    assert conftest.REDIS_URL is None


@pytest.mark.backend
def test_marked_by_hand():
    pass
"""

MODULE = """
import pytest
from conftest import PG_URL

pytestmark = pytest.mark.skipif(not PG_URL, reason="PostgreSQL only")


def test_in_a_module_that_names_it():
    pass
"""


def test_a_test_is_placed_by_what_it_uses(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\nmarkers = backend: repeated\n"
    )
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_uses=TESTS, test_module=MODULE)
    backend = pytester.runpytest_inprocess(
        "-m", "backend", "--collect-only", "-q", "-p", "no:randomly"
    )
    found = {line.split("::")[1] for line in backend.outlines if "::" in line}
    assert found == {
        "test_through_the_engine",
        "test_through_a_fixture_that_names_the_setting",
        "test_naming_it_in_its_own_code",
        "test_marked_by_hand",
        "test_in_a_module_that_names_it",
    }
