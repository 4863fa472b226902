"""The chain: the registry client (web3, loaded only when a command needs it), its config, the
committer keystores, receipts as git notes, and a local Anvil.  It reads the store, never a brain.
"""
