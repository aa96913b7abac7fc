"""rocketq's web console: RocketMQ Dashboard's pages, server-rendered (no JavaScript build chain), talking to the
cluster only through the client SDK's ``AdminClient``.

``app.make_app`` builds the aiohttp application; every module under ``rocketq.console.pages`` is one page (or a
group of pages) and is found by discovery, so a new page is a new module and a template, nothing else.
"""
