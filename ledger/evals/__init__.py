"""Evaluations of skills in the agentskills.io format (issue 47): paired runs with and without a skill."""
