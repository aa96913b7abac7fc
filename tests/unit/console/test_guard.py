"""Another web site cannot act through the operator's browser: cross-site posts and DNS-rebound hosts are
refused before any page runs (no cluster: a refused request never reaches one)."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from rocketq.client import AdminClient
from rocketq.common.addresses import is_loopback
from rocketq.console.app import make_app


async def _client(**kwargs: bool) -> tuple[TestClient[web.Request, web.Application], list[str]]:
    app = make_app(AdminClient(namesrv_addr="127.0.0.1:1"), **kwargs)
    reached: list[str] = []
    routes = web.RouteTableDef()

    @routes.post("/probe")
    async def probe(request: web.Request) -> web.StreamResponse:
        reached.append(request.headers.get("Origin", ""))
        return web.Response(text="done")

    app.router.add_routes(routes)
    client = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    return client, reached


async def test_a_cross_site_post_is_refused_and_never_reaches_the_page() -> None:
    client, reached = await _client()
    try:
        origin = f"http://127.0.0.1:{client.port}"
        assert (await client.post("/probe", headers={"Origin": origin})).status == 200
        assert (await client.post("/probe")).status == 200  # no Origin (a non-browser client)
        resp = await client.post("/probe", headers={"Origin": "https://evil.example"})
        assert resp.status == 403 and "another site" in await resp.text()
        resp = await client.post("/probe", headers={"Sec-Fetch-Site": "cross-site", "Origin": origin})
        assert resp.status == 403
        assert reached == [origin, ""]
    finally:
        await client.close()


async def test_a_loopback_console_answers_loopback_host_names_only() -> None:
    client, reached = await _client(loopback_only=True)
    try:
        for host in (f"127.0.0.1:{client.port}", f"localhost:{client.port}", "[::1]:8080", "127.0.0.2"):
            assert (await client.post("/probe", headers={"Host": host})).status == 200, host
        resp = await client.get("/ops", headers={"Host": f"rebound.evil.example:{client.port}"})
        assert resp.status == 403 and "loopback addresses only" in await resp.text()
        assert (await client.post("/probe", headers={"Host": "10.0.0.5:8080"})).status == 403
        assert len(reached) == 4
    finally:
        await client.close()
    open_client, _ = await _client(loopback_only=False)  # a console bound to another address: any Host
    try:
        assert (await open_client.post("/probe", headers={"Host": "console.example:8080"})).status == 200
    finally:
        await open_client.close()


def test_loopback_names() -> None:
    assert all(is_loopback(h) for h in ("localhost", "127.0.0.1", "127.9.9.9", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "10.1.2.3", "evil.example", ""))
