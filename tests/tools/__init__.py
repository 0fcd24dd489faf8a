"""Tests of the tools, one folder per part of kata/: judge/, worker/, grading/, learner/."""
