"""``ledger sync``: the brain projected into runtimes' folders and their edits recorded back, pass by pass,
with the journal that settles a killed pass and the three-way merge of a skill's files.
"""
