"""Replication: master/slave HA on top of the store, and the 5.x controller (``replication.controller``)."""
