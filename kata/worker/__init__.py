"""The worker: the only process that runs the learner's code.

``judge/proxy.py`` starts it (``python -I kata/worker/main.py CONFIG``) and is the only thing that
talks to it. It imports the learner's chapter modules, calls their functions with the arguments the
judge sends, and answers with plain data (``kata/wire.py``). It decides nothing: the judge compares
every answer and writes every report. ``limits.py`` is what it may use (CPU, memory, files, output).
"""
