"""What the tests share: the one CLI runner, the one brain factory, and the reliability harnesses
(each runnable alone: ``python -m tests.harness.NAME``)."""
