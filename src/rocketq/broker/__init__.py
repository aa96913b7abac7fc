"""The broker: RocketMQ 4.9's broker on rocketq's store, in four rooms around one composition root.

* ``controller`` builds everything, hands it over in one ``context.BrokerContext`` and starts and stops it;
  ``role`` (master/slave with an epoch), ``metrics`` (the one registry) and ``config`` sit beside it;
* ``messaging/`` — the business rules, transport-neutral: send (single, batch, plain runs), pull, consumer
  operations, message semantics, and ``PutAck`` (when a put may be answered: flush, then replication);
* ``processors/`` — the remoting front: header in, service call, answer out through the gate's one exit;
* ``managers/`` — the tables with a file (topics, groups, offsets, locks, sink watermarks, clients), one
  persistence contract (``managers.persist.ConfigManager``);
* ``services/`` — what runs in the background: name-server registration, delay levels, timers, transaction
  checks, long polling.

``docs/architecture.md`` follows a send and a pull through these rooms.
"""
