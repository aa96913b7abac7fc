"""The compiled twins: the store's batch encoder, the consumer's pull decoder, the remoting frame codec, the
header reader, the producer's batch encoder, the store's plain-run writer, the broker's plain-send reader,
the producer's V2 extFields builder, the producer's auto-batch gathering (pyproject.toml holds the rest).

``optional=True``: without a C compiler or zlib headers the install still succeeds and each module falls back
to its pure-Python twin (``IMPLEMENTATION`` in ``rocketq.store.appendcodec``, ``rocketq.protocol.pullcodec``,
``rocketq.protocol.framecodec`` and ``rocketq.client.batchcodec`` tells which runs; ``make test`` requires the
compiled ones).
"""

from setuptools import Extension, setup

_SLOTS = "src/rocketq/protocol/_slots.h"
_JSONWRITE = "src/rocketq/protocol/_jsonwrite.h"
_SENDREPLY = ["src/rocketq/protocol/_sendreply.h", _JSONWRITE]  # _sendreply.h includes _jsonwrite.h
_STORECODEC = "src/rocketq/store/_storecodec.h"


def _twin(name: str, source: str, headers: list[str], **extra: list[str]) -> Extension:
    """One optional compiled twin: built with warnings on, skipped (pure twin used) if it cannot be built.

    ``headers`` are the shared headers the source includes: listed as ``depends`` so that editing one
    rebuilds every module that includes it (setuptools otherwise compares the .c file's time only)."""
    return Extension(
        name,
        sources=[source],
        depends=headers,
        extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        optional=True,
        **extra,
    )


setup(
    ext_modules=[
        _twin("rocketq.store._appendcodec_c", "src/rocketq/store/_appendcodec_c.c", [_STORECODEC], libraries=["z"]),
        _twin("rocketq.store._plainrun_c", "src/rocketq/store/_plainrun_c.c", [_STORECODEC], libraries=["z"]),
        _twin("rocketq.protocol._pullcodec_c", "src/rocketq/protocol/_pullcodec_c.c", [_SLOTS]),
        _twin("rocketq.protocol._framecodec_c", "src/rocketq/protocol/_framecodec_c.c", [_SLOTS, *_SENDREPLY]),
        _twin("rocketq.protocol._headercodec_c", "src/rocketq/protocol/_headercodec_c.c", []),
        _twin("rocketq.client._batchcodec_c", "src/rocketq/client/_batchcodec_c.c", [_SLOTS]),
        _twin(
            "rocketq.broker.messaging._plainsend_c",
            "src/rocketq/broker/messaging/_plainsend_c.c",
            [_SLOTS, *_SENDREPLY],
        ),
        _twin("rocketq.client._sendext_c", "src/rocketq/client/_sendext_c.c", [_JSONWRITE]),
        _twin("rocketq.client._gather_c", "src/rocketq/client/_gather_c.c", [_SLOTS]),
    ]
)
