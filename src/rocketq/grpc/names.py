"""Resource names as the proxy checks them (``GrpcValidator``): namespaces, topic and group rules.

A ``Resource`` with a namespace names ``ns%name`` on the broker (``NamespaceUtil.wrapNamespace``); answers
split it back. Topics: RocketMQ's name rule, then no system topic (ILLEGAL_TOPIC); groups likewise
(ILLEGAL_CONSUMER_GROUP).
"""

from __future__ import annotations

from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.grpc.status import Code, GrpcRefusal
from rocketq.protocol.topics import group_name_error, is_system_group, is_system_topic, topic_name_error

NAMESPACE_SEPARATOR = "%"


def wrap(resource: pb.Resource) -> str:
    """The broker's name of a resource: ``namespace%name`` when a namespace is given."""
    ns = resource.resource_namespace
    name = resource.name
    if not ns or name.startswith(f"{ns}{NAMESPACE_SEPARATOR}"):
        return name
    return f"{ns}{NAMESPACE_SEPARATOR}{name}"


def resource(name: str, namespace: str = "") -> pb.Resource:
    """A broker name back as a ``Resource`` (the namespace prefix split off when it is ``namespace``)."""
    prefix = f"{namespace}{NAMESPACE_SEPARATOR}"
    if namespace and name.startswith(prefix):
        return pb.Resource(resource_namespace=namespace, name=name[len(prefix) :])
    return pb.Resource(resource_namespace=namespace, name=name)


def topic_of(res: pb.Resource) -> str:
    """The checked broker name of a topic resource; ``GrpcRefusal(ILLEGAL_TOPIC)`` otherwise."""
    error = topic_name_error(res.name)
    if error is not None:
        raise GrpcRefusal(Code.ILLEGAL_TOPIC, error)
    name = wrap(res)
    if is_system_topic(res.name) or is_system_topic(name):
        raise GrpcRefusal(Code.ILLEGAL_TOPIC, "cannot access system topic")
    if len(name) > 127:
        raise GrpcRefusal(Code.ILLEGAL_TOPIC, "the specified topic is longer than topic max length 127")
    return name


def group_of(res: pb.Resource) -> str:
    """The checked broker name of a consumer group; ``GrpcRefusal(ILLEGAL_CONSUMER_GROUP)`` otherwise."""
    error = group_name_error(res.name)
    if error is not None:
        raise GrpcRefusal(Code.ILLEGAL_CONSUMER_GROUP, error)
    name = wrap(res)
    if is_system_group(res.name):
        raise GrpcRefusal(Code.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")
    if len(name) > 255:
        raise GrpcRefusal(Code.ILLEGAL_CONSUMER_GROUP, "the specified group is longer than group max length 255")
    return name


def has_control_character(text: str) -> bool:
    """Guava's ``CharMatcher.javaIsoControl``: U+0000..U+001F and U+007F..U+009F."""
    return any(c <= "\x1f" or "\x7f" <= c <= "\x9f" for c in text)
