import sys

from memo_solver.cli import main

sys.exit(main())
