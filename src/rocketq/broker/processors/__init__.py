"""The remoting front of the broker: one processor per request family, header in, answer out."""
