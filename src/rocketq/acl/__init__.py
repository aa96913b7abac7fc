"""Plain ACL (RocketMQ 4.9's ACL 1.0): AK/SK signatures, accounts and permissions, address white lists.

Transport-neutral: ``signature`` (the request signature, shared with the client), ``patterns`` (address
patterns), ``config`` (the YAML files), ``resources`` (request → needed permissions), ``validator`` (the check,
in Java's order), ``store`` (the live rules: hot reload and the admin updates). The broker plugs
``validator.check`` into its request gate; see docs/security.md.
"""
