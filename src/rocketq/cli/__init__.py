"""Command-line entry point ``rocketq``."""
