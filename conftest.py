"""Root conftest: loads the kata plugin so that `--impl`, `--steps` and `--progress` work from anywhere.

Options must be defined here, at the repository root, for `pytest --impl ...` to see them.
"""

pytest_plugins = ["kata.judge.plugin"]
