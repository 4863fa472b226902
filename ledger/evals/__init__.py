"""Evaluations of skill versions in the agentskills format (issue 47): plans, runs, lift and the gate."""
