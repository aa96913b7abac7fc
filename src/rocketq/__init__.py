"""rocketq: Apache RocketMQ 4.x rebuilt in Python."""

__version__ = "0.1.0"

