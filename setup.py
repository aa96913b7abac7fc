"""The compiled twins: the store's batch encoder, the consumer's pull decoder, the remoting frame codec, the
header reader, the producer's batch encoder (pyproject.toml holds the rest).

``optional=True``: without a C compiler or zlib headers the install still succeeds and each module falls back
to its pure-Python twin (``IMPLEMENTATION`` in ``rocketq.store.appendcodec``, ``rocketq.protocol.pullcodec``,
``rocketq.protocol.framecodec`` and ``rocketq.client.batchcodec`` tells which runs; ``make test`` requires the
compiled ones).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "rocketq.store._appendcodec_c",
            sources=["src/rocketq/store/_appendcodec_c.c"],
            libraries=["z"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        ),
        Extension(
            "rocketq.protocol._pullcodec_c",
            sources=["src/rocketq/protocol/_pullcodec_c.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        ),
        Extension(
            "rocketq.protocol._framecodec_c",
            sources=["src/rocketq/protocol/_framecodec_c.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        ),
        Extension(
            "rocketq.protocol._headercodec_c",
            sources=["src/rocketq/protocol/_headercodec_c.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        ),
        Extension(
            "rocketq.client._batchcodec_c",
            sources=["src/rocketq/client/_batchcodec_c.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        ),
    ]
)
