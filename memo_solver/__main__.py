from memo_solver.cli.main import run

run()
