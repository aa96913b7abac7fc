"""The broker's business rules, transport-neutral (RocketMQ 5's ``MessagingProcessor`` idea): typed requests
in, outcomes out, no ``RemotingCommand``. The remoting processors and, later, a gRPC front end both call them."""
