"""Tests of kata/learner: the learner's loop, notebooks, nox -s train."""
