"""ALFWorld on the real TextWorld engine: the benchmark and environment, and the game-data loader."""
