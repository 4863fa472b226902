"""Anchoring a brain on chain: deploy the registry, register the agent, commit snapshot roots one by one
or many brains' heads in one epoch.
"""
