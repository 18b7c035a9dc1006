"""dlrover-local: DLRover 0.6.1's PSLocalOptimizer answering an environment's plan requests."""
