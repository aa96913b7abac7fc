"""The broker's tables and their files, each a ``persist.ConfigManager`` (Java's ``*Manager`` classes)."""
