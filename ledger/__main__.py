from ledger.cli import main

main(prog_name="ledger")
