"""Tests of the learner's and instructor's tools (kata/learner, kata/grading)."""
