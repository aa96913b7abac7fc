"""The 5.x controller: per broker group the replicas, the master and its epoch, the in-sync set and its epoch.

``state`` (tables and events), ``elect`` (the election order), ``liveness`` (heartbeats, injected clock),
``manager`` (request → result + events, pure), ``epoch`` (the broker's epoch file and the truncation point),
``store`` (persistence behind an interface), ``service`` (the controller: manager + liveness + store),
``processors`` (remoting adapters) and ``server`` (``rocketq controller``). docs/replication.md.
"""
