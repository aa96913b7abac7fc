"""Admin and try-it-by-hand subcommands, in the spirit of ``mqadmin``::

    rocketq topic create|update|delete|list|route|status      (cli/topic.py)
    rocketq topic clusters|consumers|allocate|order-conf|cq    (cli/topic_extra.py)
    rocketq group progress|connections|reset-offset|resend-dlq (cli/group.py)
    rocketq group list|config|update|delete|status|clone-offset|skip|topics (cli/group_admin.py)
    rocketq producer connections|list                          (cli/producer.py)
    rocketq cluster list / rocketq broker-status               (cli/cluster.py)
    rocketq broker-config / namesrv-config / kv / broker-perm / clean (cli/config_commands.py)
    rocketq stats all|broker-consume|item                      (cli/stats.py)
    rocketq message by-id|by-key|by-offset|peek|consume-directly|trace (cli/message.py)
    rocketq send / rocketq consume                             (cli/send_consume.py)
    rocketq acl list|version|update|delete|white-list          (cli/acl.py)
    rocketq ha status|switch                                   (cli/ha.py)

Every command takes ``-n/--namesrv`` (default ``$NAMESRV_ADDR``), ``--json``, ``--timeout`` and the ACL account
``--access-key``/``--secret-key``/``--security-token`` (default ``$ROCKETQ_ACCESS_KEY`` ...). Output and exit
codes follow one convention (cli/output.py, docs/cli.md): a table with a header, or one JSON document with
``--json``; 0 success, 1 failed or found nothing (one ``error:`` line on stderr), 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from rocketq.cli import acl, cluster, config_commands, group, ha, message, producer, send_consume, stats, topic
from rocketq.cli.command import credential_args, seconds
from rocketq.cli.tls_args import add_tls_arguments

if TYPE_CHECKING:
    from rocketq.cli.command import Subparsers


def register(subparsers: Subparsers) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-n", "--namesrv", default=os.environ.get("NAMESRV_ADDR"),
                        help="name server address(es), 'host:port;host:port' (default $NAMESRV_ADDR)")  # fmt: skip
    common.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
    common.add_argument("--timeout", type=seconds, default=5.0, help="request timeout in seconds (default 5)")
    add_tls_arguments(common)
    credential_args(common)
    for module in (topic, group, producer, cluster, config_commands, stats, ha, message, send_consume, acl):
        module.register(subparsers, common)
