"""Evaluations in the agentskills shape: a skill's ``evals/evals.json``, the paired runs, their workspace.

- :mod:`ledger.evals.evalset`: ``evals/evals.json`` read and checked (the guide's keys exactly), and the
  eval set's digest (the ``evals`` directory's bundle digest, docs/bundle-hash.md §4);
- :mod:`ledger.evals.workspace`: the workspace layout (``iteration-K/eval-ID/COND[/run-R]/``),
  ``grading.json`` / ``timing.json`` read and checked, ``benchmark.json`` computed;
- :mod:`ledger.evals.runner`: one run of the runner and the grader under the env contract
  (docs/reference.md, "Eval runner contract"), each in a fresh temporary folder, with a timeout;
- :mod:`ledger.evals.refrunner` and :mod:`ledger.evals.refgrader`: the deterministic reference runner and
  grader (``python -m ledger.evals.refrunner``, ``python -m ledger.evals.refgrader``).

Nothing here signs or writes the brain: :mod:`ledger.brain.evaluations` composes these with the evidence log.
"""
