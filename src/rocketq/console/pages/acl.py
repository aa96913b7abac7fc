"""ACL: each broker's accounts (secrets masked) and global white list, with forms to create/update and delete
an account and to replace the white list; a broker with ACL off says so instead."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from aiohttp import web

from rocketq.client.acl import PERMS, AclAccount, AclConfig
from rocketq.console.inputs import attempt, back_to, required
from rocketq.console.page import Page
from rocketq.console.render import render
from rocketq.console.session import admin_of

PAGE = Page(title="ACL", path="/acl", order=100)
routes = web.RouteTableDef()


@dataclass(frozen=True)
class BrokerAcl:
    name: str
    addr: str
    config: AclConfig | None
    error: str | None


@routes.get("/acl")
async def acl(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    brokers = await admin.brokers()
    found = await asyncio.gather(*(attempt(admin.acl_config(b.addr)) for b in brokers))
    views = [BrokerAcl(f"{b.broker_name}/{b.broker_id}", b.addr, cfg, err)
             for b, (cfg, err) in zip(brokers, found, strict=True)]  # fmt: skip
    acl_on = any(v.config is not None for v in views)
    return render(request, "acl.html", views=views, acl_on=acl_on, perms=PERMS)


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.replace("\n", ",").split(",") if n.strip()]


@routes.post("/acl/account")
async def update_account(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    form = await request.post()
    fields = {k: str(v) for k, v in form.items()}
    for perm in ("default_topic_perm", "default_group_perm"):
        if fields.get(perm) and fields[perm] not in PERMS:
            raise ValueError(f"{perm}: {fields[perm]!r} is not one of {', '.join(PERMS)}")
    account = AclAccount(
        access_key=required(fields, "access_key", "access key"),
        secret_key=fields.get("secret_key") or None,
        white_remote_address=fields.get("white_remote_address") or None,
        admin=fields.get("admin") == "on",
        default_topic_perm=fields.get("default_topic_perm") or None,
        default_group_perm=fields.get("default_group_perm") or None,
        topic_perms=_names(fields.get("topic_perms", "")) or None,
        group_perms=_names(fields.get("group_perms", "")) or None,
    )
    targets = await admin.acl_targets(broker_addr=fields.get("broker") or None)
    for addr in targets:
        await admin.update_acl_account(addr, account)
    raise back_to(request, "/acl", done=f"account {account.access_key} updated on {', '.join(targets)}")


@routes.post("/acl/account/delete")
async def delete_account(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    form = await request.post()
    key = required(form, "access_key", "access key")
    targets = await admin.acl_targets(broker_addr=str(form.get("broker", "")) or None)
    for addr in targets:
        await admin.delete_acl_account(addr, key)
    raise back_to(request, "/acl", done=f"account {key} deleted on {', '.join(targets)}")


@routes.post("/acl/white")
async def update_white(request: web.Request) -> web.StreamResponse:
    admin = admin_of(request)
    form = await request.post()
    addrs = _names(str(form.get("addrs", "")))
    targets = await admin.acl_targets(broker_addr=str(form.get("broker", "")) or None)
    for addr in targets:
        await admin.update_global_white_addrs(addr, addrs)
    whites = ", ".join(addrs) or "(empty)"
    raise back_to(request, "/acl", done=f"global white list set to {whites} on {', '.join(targets)}")
