"""The ``rocketmq`` source and sink against a broker with ``aclEnable=true``: with the ``accessKey``/``secretKey``
options every request of the driver and of the tasks is signed; without them the broker's refusal fails the
job with its remark. (A wrong secret on the read path: tests/interop/java/test_acl_rocketq_client.py, on the read
task itself, without a Spark job.)"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import AdminClient, ClientConfig
from rocketq.testing.acl import AclAccounts

A = AclAccounts()


def test_sink_and_source_with_an_acl_account(spark: Any, make_servers: Any, tmp_path: Path) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(A.yaml())
    servers = make_servers(aclEnable="true", aclFilePath=str(acl_file))
    ns = servers.namesrv_addr

    async def create() -> None:
        cfg = ClientConfig(namesrv_addr=ns, access_key=A.admin_key, secret_key=A.admin_secret)
        async with AdminClient(config=cfg) as admin:
            await admin.create_topic(A.topic, cluster="DefaultCluster", read_queue_nums=2, write_queue_nums=2)

    asyncio.run(create())
    account = {"accessKey": A.user_key, "secretKey": A.user_secret}
    rows = spark.createDataFrame([(f"acl-{i}",) for i in range(10)], "body STRING")
    rows.write.format("rocketmq").mode("append").option("nameServer", ns).option("topic", A.topic) \
        .options(**account).save()  # fmt: skip
    read = spark.read.format("rocketmq").option("nameServer", ns).option("topic", A.topic) \
        .option("consumerGroup", A.group).options(**account).load()  # fmt: skip
    assert sorted(r.body.decode() for r in read.select("body").collect()) == sorted(f"acl-{i}" for i in range(10))

    with pytest.raises(Exception, match="No accessKey is configured"):
        rows.write.format("rocketmq").mode("append").option("nameServer", ns).option("topic", A.topic).save()
