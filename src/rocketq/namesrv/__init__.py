"""The name server: broker registry and topic routes (Apache RocketMQ 4.9 ``namesrv``)."""

from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.kv_config import KVConfigManager
from rocketq.namesrv.route_info import RouteInfoManager
from rocketq.namesrv.server import NamesrvServer

__all__ = ["KVConfigManager", "NamesrvConfig", "NamesrvServer", "RouteInfoManager"]
