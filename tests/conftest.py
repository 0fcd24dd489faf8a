"""How the suite is shared out over processes (pytest-xdist), and its markers.

- Under pytest-xdist (``-n logical --dist loadgroup``, as ``nox -s selfcheck`` runs it) a test module stays
  together in one process, so its fixtures are made once, unless its tests are marked ``spread`` (each case may
  run in any process: they share nothing costly) or name their own ``xdist_group``. The groups holding ``proof``
  or ``slow`` tests are handed out first, so that no long one starts last while the other process idles.
- ``proof``: a heavy proof that ``nox -s selfcheck`` leaves to ``nox -s proofs`` (``.ci/run`` runs both).

``--chapter N`` (one chapter's share) is the root conftest.py's. Only the authors' suite reads this file: the
student edition ships no ``tests/conftest.py``.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Register the suite's markers."""
    config.addinivalue_line("markers", "proof: a heavy proof, run by `nox -s proofs` (.ci/run runs it after "
                                       "`nox -s selfcheck`), not by selfcheck")
    config.addinivalue_line("markers", "spread: under pytest-xdist each case may run in another process (the "
                                       "cases share no costly fixture)")


def group_of(item: pytest.Item) -> str:
    """The pytest-xdist group of a test: its own ``xdist_group``, itself when ``spread``, else its module."""
    marker = item.get_closest_marker("xdist_group")
    if marker is not None:
        return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))
    if item.get_closest_marker("spread") is not None:
        return item.nodeid
    return item.nodeid.split("::")[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """Under pytest-xdist: group the tests, and put the groups holding long ones first."""
    if getattr(config.option, "dist", "no") == "no":
        return
    groups: dict[str, list] = {}
    for item in items:
        groups.setdefault(group_of(item), []).append(item)
    heavy = {name for name, members in groups.items()
             if any(i.get_closest_marker("proof") or i.get_closest_marker("slow") for i in members)}
    items[:] = [i for name in sorted(groups, key=lambda g: g not in heavy) for i in groups[name]]
    for name, members in groups.items():
        for item in members:
            if item.get_closest_marker("xdist_group") is None:
                item.add_marker(pytest.mark.xdist_group(name))
