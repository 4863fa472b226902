"""The chain: the registry client (a JSON-RPC client and the registry's ABI by hand; web3 only to
deploy), its config, the committer keystores, receipts as git notes, and a local Anvil.  It reads
the store, never a brain.
"""
