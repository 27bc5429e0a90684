"""Every RNN test runs at one torch thread (the shared ``one_thread`` fixture)."""

import pytest


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    yield
