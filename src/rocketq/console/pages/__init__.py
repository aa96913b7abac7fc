"""One module per console page (found by ``rocketq.console.app.discover_pages``)."""
