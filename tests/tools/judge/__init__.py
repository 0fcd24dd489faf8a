"""Tests of kata/judge: the plugin, the checks, the warm judge, fresh inputs, attacks on the verdict."""
