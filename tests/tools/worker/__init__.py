"""Tests of kata/worker: the process the learner's code runs in."""
