"""Plain ACL on gRPC: the 5.x clients' ``authorization`` header, checked against the broker's accounts.

The header is ``MQv2-HMAC-SHA1 Credential=<AK>[/…], SignedHeaders=x-mq-date-time, Signature=<hex>``; the
signature is HMAC-SHA1 keyed with the secret key over the ``x-mq-date-time`` value (hex, either case). The
check runs in the order of the remoting one (``acl/validator.py``, Java's ``PlainPermissionManager``): global
white list, key, account, account white list, signature, then the resources the request needs — derived as
Java 5.1's ``PlainAccessValidator.parse`` does for gRPC messages (a group is its ``%RETRY%`` topic, SUB).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

from rocketq.acl import permission
from rocketq.acl.config import AclRules
from rocketq.acl.errors import AclDenied
from rocketq.acl.validator import java_hashmap_order
from rocketq.grpc.names import wrap
from rocketq.grpc.proto import messaging_service_pb2 as svc
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.protocol.topics import RETRY_PREFIX

AUTHORIZATION = "authorization"
DATE_TIME = "x-mq-date-time"
METHOD = "MQv2-HMAC-SHA1"
_FRAME = "org.apache.rocketmq.acl.plain.PlainAccessValidator.validate"
ANY = permission.ANY


def parse_authorization(value: str) -> tuple[str, str]:
    """(access key, signature as base64) from the header; ``AclDenied`` when it is not one."""
    method, _, rest = value.strip().partition(" ")
    if method != METHOD:
        raise AclDenied(f"authorization method {method!r} is not {METHOD}", _FRAME)
    items: dict[str, str] = {}
    for part in rest.split(","):
        key, sep, val = part.strip().partition("=")
        if sep:
            items[key.strip()] = val.strip()
    credential = items.get("Credential")
    signature = items.get("Signature")
    if credential is None or signature is None:
        raise AclDenied("authorization header without Credential or Signature", _FRAME)
    try:
        raw = bytes.fromhex(signature)
    except ValueError:
        raise AclDenied("authorization signature is not hex", _FRAME) from None
    return credential.split("/", 1)[0], base64.b64encode(raw).decode("ascii")


def sign(date_time: str, secret_key: str) -> str:
    """What a client puts in ``Signature=`` (lowercase hex)."""
    return hmac.new(secret_key.encode(), date_time.encode(), hashlib.sha1).hexdigest()


def _group(out: dict[str, int], res: pb.Resource) -> None:
    if res.name:
        out[RETRY_PREFIX + wrap(res)] = permission.SUB


def _topic(out: dict[str, int], res: pb.Resource, perm: int) -> None:
    if res.name:
        out[wrap(res)] = perm


def needed(request: object) -> dict[str, int]:
    """Resource → permission a gRPC request needs (Java 5.1's parse of each request type)."""
    out: dict[str, int] = {}
    if isinstance(request, svc.HeartbeatRequest):
        if request.client_type in (pb.PUSH_CONSUMER, pb.SIMPLE_CONSUMER) and request.HasField("group"):
            _group(out, request.group)
    elif isinstance(request, svc.SendMessageRequest):
        for msg in request.messages:
            _topic(out, msg.topic, permission.PUB)
    elif isinstance(request, (svc.ReceiveMessageRequest,)):
        _group(out, request.group)
        _topic(out, request.message_queue.topic, permission.SUB)
    elif isinstance(request, (svc.AckMessageRequest, svc.ChangeInvisibleDurationRequest,
                              svc.ForwardMessageToDeadLetterQueueRequest, svc.QueryAssignmentRequest)):  # fmt: skip
        _group(out, request.group)
        _topic(out, request.topic, permission.SUB)
    elif isinstance(request, svc.EndTransactionRequest):
        _topic(out, request.topic, permission.PUB)
    elif isinstance(request, svc.QueryRouteRequest):
        _topic(out, request.topic, ANY)
    elif isinstance(request, svc.NotifyClientTerminationRequest):
        if request.HasField("group"):
            _group(out, request.group)
    elif isinstance(request, svc.TelemetryCommand) and request.HasField("settings"):
        settings = request.settings
        if settings.HasField("publishing"):
            for t in settings.publishing.topics:
                _topic(out, t, permission.PUB)
        elif settings.HasField("subscription"):
            _group(out, settings.subscription.group)
            for entry in settings.subscription.subscriptions:
                _topic(out, entry.topic, permission.SUB)
    return out


def authenticate(rules: AclRules, ip: str, metadata: Mapping[str, str]) -> str | None:
    """The account's access key once the header's signature is good (None: a white-listed address, which
    needs no key); ``AclDenied`` otherwise."""
    if rules.white_listed(ip):
        return None
    header = metadata.get(AUTHORIZATION)
    if not header:
        raise AclDenied("No accessKey is configured", _FRAME)
    key, given = parse_authorization(header)
    account = rules.accounts.get(key)
    if account is None:
        raise AclDenied(f"No acl config for {key}", _FRAME)
    if rules.white_listed(ip, account):
        return None
    expected = base64.b64encode(
        hmac.new(account.secret_key.encode(), metadata.get(DATE_TIME, "").encode(), hashlib.sha1).digest()
    ).decode("ascii")
    if not hmac.compare_digest(expected, given):
        raise AclDenied(f"Check signature failed for accessKey={key}", _FRAME)
    return key


def authorize(rules: AclRules, key: str | None, request: object) -> None:
    """``AclDenied`` unless account ``key`` (None: white-listed) may make ``request``."""
    if key is None:
        return
    account = rules.accounts[key]
    resources = needed(request)
    owned = account.perms
    if not resources or (owned is None and account.admin):
        return
    for resource, need in java_hashmap_order(resources).items():
        is_group = resource.startswith(RETRY_PREFIX)
        if owned is not None and resource in owned:
            have = owned[resource]
        else:
            have = account.default_group_perm if is_group else account.default_topic_perm
        if permission.check(need, have):
            continue
        what = f"group:{resource[len(RETRY_PREFIX) :]}" if is_group else f"topic:{resource}"
        raise AclDenied(f"No default permission for {what}", _FRAME)
