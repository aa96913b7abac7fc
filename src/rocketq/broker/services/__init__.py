"""What the broker runs in the background (Java's ``*Service`` classes): registration, schedule, timers,
transaction checks, long polling. A service is owned and started by the controller."""
