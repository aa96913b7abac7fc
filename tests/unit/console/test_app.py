"""The console's skeleton: page discovery, the layout, the error boundary (no cluster: the admin is not started)."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from rocketq.client import AdminClient
from rocketq.console.app import discover_pages, make_app


async def _client(app: web.Application) -> TestClient[web.Request, web.Application]:
    client = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    return client


def test_every_page_module_declares_routes() -> None:
    found = discover_pages()
    assert found, "no page module found"
    titles = [page.title for page, _ in found if page is not None]
    assert "OPS" in titles
    assert len(titles) == len(set(titles)), f"two pages share a title: {titles}"


async def test_ops_lists_the_name_servers_in_the_layout() -> None:
    client = await _client(make_app(AdminClient(namesrv_addr="127.0.0.1:1;127.0.0.2:2")))
    try:
        resp = await client.get("/", allow_redirects=True)
        text = await resp.text()
        assert resp.status == 200
        assert "127.0.0.1:1" in text and "127.0.0.2:2" in text
        assert 'href="/ops" class="active"' in text
    finally:
        await client.close()


async def test_a_failing_handler_is_an_error_page_not_a_traceback() -> None:
    routes = web.RouteTableDef()

    @routes.get("/boom")
    async def boom(request: web.Request) -> web.StreamResponse:
        raise ValueError("queue id <script>9</script> out of range")

    @routes.get("/crash")
    async def crash(request: web.Request) -> web.StreamResponse:
        raise RuntimeError("internal detail")

    app = make_app(AdminClient(namesrv_addr="127.0.0.1:1"))
    app.router.add_routes(routes)
    client = await _client(app)
    try:
        resp = await client.get("/boom")
        text = await resp.text()
        assert resp.status == 400
        assert "&lt;script&gt;9&lt;/script&gt;" in text and "<script>9" not in text  # autoescaped
        resp = await client.get("/crash")
        assert resp.status == 500
        assert "internal detail" not in await resp.text()
    finally:
        await client.close()

