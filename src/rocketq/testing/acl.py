"""ACL fixtures for tests: the accounts of a test ``plain_acl.yml`` and a Java 4.9 broker that enforces it.

``AclAccounts`` is one file's worth of accounts: an admin that may do everything, a user allowed one topic and
one consumer group (``PUB|SUB`` on ``topic``, ``SUB`` on ``group``; everything else is DENY), and the names of
a topic and a group the user lacks. ``AclJavaCluster`` is a ``JavaCluster`` whose broker runs with
``aclEnable=true`` and reads that file (Java's system property ``rocketmq.acl.plain.file``, a path relative to
``ROCKETMQ_HOME``, so the shared home directory is left alone).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from rocketq.testing.java import BROKER_MAIN, ROCKETMQ_HOME, JavaCluster


@dataclass(frozen=True)
class AclAccounts:
    topic: str = "AclTopic"
    group: str = "acl-group"
    other_topic: str = "AclOtherTopic"
    other_group: str = "acl-other-group"
    admin_key: str = "rocketq-admin"
    admin_secret: str = "admin-secret-1"
    user_key: str = "rocketq-user"
    user_secret: str = "user-secret-1"

    def yaml(self) -> str:
        """The ``plain_acl.yml`` text (written by hand: the tests need no YAML library)."""
        return (
            "globalWhiteRemoteAddresses: []\n"
            "accounts:\n"
            f"  - accessKey: {self.admin_key}\n"
            f"    secretKey: {self.admin_secret}\n"
            "    whiteRemoteAddress:\n"
            "    admin: true\n"
            f"  - accessKey: {self.user_key}\n"
            f"    secretKey: {self.user_secret}\n"
            "    whiteRemoteAddress:\n"
            "    admin: false\n"
            "    defaultTopicPerm: DENY\n"
            "    defaultGroupPerm: DENY\n"
            "    topicPerms:\n"
            f"      - {self.topic}=PUB|SUB\n"
            "    groupPerms:\n"
            f"      - {self.group}=SUB\n"
        )


@dataclass
class AclJavaCluster(JavaCluster):
    """A Java name server + broker with ``aclEnable=true`` reading ``account_file`` (written from ``accounts``)."""

    accounts: AclAccounts = field(default_factory=AclAccounts)
    # not JavaCluster.acl_file (its own-home file, used with plain_acl): this one stays outside the shared home
    account_file: Path | None = None

    def start(self, timeout: float = 60.0) -> JavaCluster:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        if self.account_file is None:
            self.account_file = self.base_dir / "plain_acl.yml"
            self.account_file.write_text(self.accounts.yaml())
        self.broker_settings = {**self.broker_settings, "aclEnable": "true"}
        return super().start(timeout)

    def _spawn(
        self, cp: str, heap: tuple[str, ...], main: str, conf: Path, log_name: str
    ) -> subprocess.Popen[bytes]:
        if main == BROKER_MAIN:
            assert self.account_file is not None
            relative = os.path.relpath(self.account_file, ROCKETMQ_HOME)  # Java joins it to ROCKETMQ_HOME
            heap = (*heap, f"-Drocketmq.acl.plain.file={relative}")
        return super()._spawn(cp, heap, main, conf, log_name)
