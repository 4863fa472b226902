from ledger._entry import main

main()
