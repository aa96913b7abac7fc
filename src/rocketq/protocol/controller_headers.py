"""Headers of the 5.x controller codes (Java ``remoting/protocol/header/controller/*`` at 5.1.x).

Both sides need them: the controller reads them, and a broker in controller mode writes them (its role
manager comes in a later step), so they live in ``protocol``.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.protocol.headers import Header, wire

_KW = {"frozen": True, "slots": True, "kw_only": True}


@dataclass(**_KW)
class BrokerHeartbeatRequestHeader(Header):
    """BROKER_HEARTBEAT (904): a broker's liveness and its replication position."""

    cluster_name: str = wire("clusterName")
    broker_addr: str = wire("brokerAddr")
    broker_name: str = wire("brokerName")
    broker_id: int | None = wire("brokerId", None)
    epoch: int | None = wire("epoch", None, int32=True)
    max_offset: int | None = wire("maxOffset", None)
    confirm_offset: int | None = wire("confirmOffset", None)
    heartbeat_timeout_mills: int | None = wire("heartbeatTimeoutMills", None)
    election_priority: int | None = wire("electionPriority", None, int32=True)


@dataclass(**_KW)
class AlterSyncStateSetRequestHeader(Header):
    broker_name: str = wire("brokerName")
    master_broker_id: int = wire("masterBrokerId")
    master_epoch: int = wire("masterEpoch", int32=True)
    invoke_time: int | None = wire("invokeTime", None)


@dataclass(**_KW)
class AlterSyncStateSetResponseHeader(Header):
    new_sync_state_set_epoch: int = wire("newSyncStateSetEpoch", int32=True)


@dataclass(**_KW)
class ElectMasterRequestHeader(Header):
    """CONTROLLER_ELECT_MASTER: ``broker_id`` None = the controller's own trigger; ``designate_elect`` = admin."""

    cluster_name: str = wire("clusterName", "")
    broker_name: str = wire("brokerName")
    broker_id: int | None = wire("brokerId", None)
    designate_elect: bool = wire("designateElect", False)
    invoke_time: int | None = wire("invokeTime", None)


@dataclass(**_KW)
class MasterInfoHeader(Header):
    """The answer of ELECT_MASTER and REGISTER_BROKER: who the master is (absent fields: no master)."""

    master_broker_id: int | None = wire("masterBrokerId", None)
    master_address: str | None = wire("masterAddress", None)
    master_epoch: int | None = wire("masterEpoch", None, int32=True)
    sync_state_set_epoch: int | None = wire("syncStateSetEpoch", None, int32=True)


@dataclass(**_KW)
class RegisterBrokerToControllerRequestHeader(Header):
    """CONTROLLER_REGISTER_BROKER (Java ``RegisterSuccessRequestHeader``): the broker holds its id."""

    cluster_name: str = wire("clusterName")
    broker_name: str = wire("brokerName")
    broker_id: int = wire("brokerId")
    broker_address: str = wire("brokerAddress")
    invoke_time: int | None = wire("invokeTime", None)


@dataclass(**_KW)
class RegisterBrokerToControllerResponseHeader(Header):
    """The answer of CONTROLLER_REGISTER_BROKER (Java ``RegisterSuccessResponseHeader``): the group, and its
    master when one is alive."""

    cluster_name: str | None = wire("clusterName", None)
    broker_name: str | None = wire("brokerName", None)
    master_broker_id: int | None = wire("masterBrokerId", None)
    master_address: str | None = wire("masterAddress", None)
    master_epoch: int | None = wire("masterEpoch", None, int32=True)
    sync_state_set_epoch: int | None = wire("syncStateSetEpoch", None, int32=True)


@dataclass(**_KW)
class GetReplicaInfoRequestHeader(Header):
    broker_name: str = wire("brokerName")


@dataclass(**_KW)
class GetReplicaInfoResponseHeader(Header):
    master_broker_id: int | None = wire("masterBrokerId", None)
    master_address: str | None = wire("masterAddress", None)
    master_epoch: int | None = wire("masterEpoch", None, int32=True)


@dataclass(**_KW)
class GetMetaDataResponseHeader(Header):
    group: str | None = wire("group", None)
    controller_leader_id: str | None = wire("controllerLeaderId", None)
    controller_leader_address: str | None = wire("controllerLeaderAddress", None)
    is_leader: bool = wire("isLeader", False)
    peers: str | None = wire("peers", None)


@dataclass(**_KW)
class GetNextBrokerIdRequestHeader(Header):
    cluster_name: str = wire("clusterName")
    broker_name: str = wire("brokerName")


@dataclass(**_KW)
class GetNextBrokerIdResponseHeader(Header):
    cluster_name: str | None = wire("clusterName", None)
    broker_name: str | None = wire("brokerName", None)
    next_broker_id: int | None = wire("nextBrokerId", None)


@dataclass(**_KW)
class ApplyBrokerIdRequestHeader(Header):
    """CONTROLLER_APPLY_BROKER_ID: ``register_check_code`` is ``address;timestampMs``."""

    cluster_name: str = wire("clusterName")
    broker_name: str = wire("brokerName")
    applied_broker_id: int = wire("appliedBrokerId")
    register_check_code: str = wire("registerCheckCode")


@dataclass(**_KW)
class ApplyBrokerIdResponseHeader(Header):
    cluster_name: str | None = wire("clusterName", None)
    broker_name: str | None = wire("brokerName", None)


@dataclass(**_KW)
class CleanBrokerDataRequestHeader(Header):
    """CLEAN_BROKER_DATA: ``broker_id_set_to_clean`` is ``;``-separated ids (empty: the whole group)."""

    cluster_name: str | None = wire("clusterName", None)
    broker_name: str = wire("brokerName")
    broker_id_set_to_clean: str | None = wire("brokerIdSetToClean", None)
    is_clean_living_broker: bool = wire("isCleanLivingBroker", False)
    invoke_time: int | None = wire("invokeTime", None)


@dataclass(**_KW)
class NotifyBrokerRoleChangedRequestHeader(Header):
    """NOTIFY_BROKER_ROLE_CHANGED (controller → broker)."""

    master_address: str | None = wire("masterAddress", None)
    master_epoch: int = wire("masterEpoch", int32=True)
    sync_state_set_epoch: int = wire("syncStateSetEpoch", int32=True)
    master_broker_id: int | None = wire("masterBrokerId", None)
