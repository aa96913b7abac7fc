"""The compiled twin of the store's batch encoder (pyproject.toml holds everything else).

``optional=True``: without a C compiler or zlib headers the install still succeeds and the store uses the
pure-Python twin (``rocketq.store.appendcodec.IMPLEMENTATION`` tells which one runs; ``make test`` requires
the compiled one).
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
        )
    ]
)
