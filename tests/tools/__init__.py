"""Tests of the learner's and instructor's tools (tools/kata_tools)."""
