"""Dice of Doom (Land of Lisp, chapter 15): the board, the game on the engine, the
tree solver, its report in words and JSON, and advice."""
