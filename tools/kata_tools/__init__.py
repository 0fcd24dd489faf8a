"""The learner's loop and course grading, on top of the kata machinery (``kata/``).

Each module is one tool, run as ``python -m kata_tools COMMAND`` by a thin nox session:

- ``grade`` (``runner``, ``grade_plugin``, ``points``, ``pristine``, ``reports``, ``schema``): grade in CI;
- ``watch`` (and ``bench_watch``), ``hints``, ``worksheet``, ``doctor``: the learner's loop;
- ``release``: the student edition.

Chapters are found from ``reference/`` (``project``), never listed by hand.
"""
