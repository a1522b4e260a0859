"""The game-agnostic core: the game protocol, the lazy engine, the block codec and
cache, and the store protocol the engine is written against. It imports nothing above it."""
