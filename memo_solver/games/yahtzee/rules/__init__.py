"""The rules as a player states them: dice, boxes and rule sets, rule files and the built-in
catalog, states as users type them, the tie order."""
