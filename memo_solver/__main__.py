import sys

from memo_solver.cli.main import main

sys.exit(main())
