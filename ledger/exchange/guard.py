"""The pre-receive guard under its pre-issue-51 name, for hooks installed before the move."""

import sys

from ledger.remotes.guard import main

if __name__ == "__main__":
    sys.exit(main())
