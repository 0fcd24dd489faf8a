"""Tests of kata/grading: grade, grade-class, the gradebook, releases and the student edition."""
