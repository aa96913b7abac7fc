# The two set-up commands: `make run` and `make test`. Both create/refresh .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# `make run` needs rocketq alone (orjson, uvloop): not the test and Spark extras (pytest, mypy, PySpark ~690 MB)
RUN_STAMP := $(VENV)/.installed-run
SOURCES := pyproject.toml setup.py src/rocketq/store/_appendcodec_c.c src/rocketq/protocol/_pullcodec_c.c \
		src/rocketq/protocol/_framecodec_c.c \
		src/rocketq/protocol/_headercodec_c.c src/rocketq/client/_batchcodec_c.c

.PHONY: run test lint typecheck venv interop-venv interop-java interop-go browser bench fuzz clean

$(RUN_STAMP): $(SOURCES)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(RUN_STAMP)

# everything `make test` needs; it includes what `make run` needs
$(STAMP): $(SOURCES)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,spark]'
	touch $(STAMP) $(RUN_STAMP)

venv: $(STAMP)

interop-venv:
	bash scripts/interop-venv.sh

# Apache RocketMQ's Java jars (pinned, from Maven Central) into ~/.cache/rocketq/java, and the Java driver.
interop-java:
	bash scripts/java-interop.sh

# Apache RocketMQ's Go client (pinned in tests/interop/go/go.mod) built into ~/.cache/rocketq/go.
interop-go:
	bash scripts/go-interop.sh

# Debian's Chromium and chromedriver for the web console's browser tests (installed with apt-get when root).
browser:
	bash scripts/browser.sh

run: $(RUN_STAMP)
	$(VENV)/bin/rocketq standalone --dir ./data listenHost=127.0.0.1

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The suite, then the pure twins of the compiled codecs (as aiokafka's CI does with AIOKAFKA_NO_EXTENSIONS): the
# unit tests (each codec's twin parity tests among them), the broker's end-to-end tests (every frame, header, pull
# and append codec on the wire) and the wire fuzzer (malformed frames through the pure decoders); the client,
# name-server, security, replication and command-line suites cross no other codec path, so they run once. The
# twins' pass runs beside the main one, niced: the main pass spends most of its time waiting on servers, JVMs
# and child processes (about a third of two cores busy), and the two together fit the 15 minutes. Its output
# follows the main pass's.
PURE_TESTS = tests/unit tests/integration/broker tests/integration/test_wire_fuzz.py
test: $(STAMP) interop-venv interop-java interop-go browser lint typecheck
	@log=$$(mktemp); \
	ROCKETQ_NO_EXTENSIONS=1 nice -n 10 $(PY) -m pytest -q -p no:cacheprovider $(PURE_TESTS) >$$log 2>&1 & twins=$$!; \
	echo "ROCKETQ_REQUIRE_NATIVE=1 $(PY) -m pytest -q -p no:cacheprovider  (beside it: ROCKETQ_NO_EXTENSIONS=1 ... $(PURE_TESTS))"; \
	native_rc=0; ROCKETQ_REQUIRE_NATIVE=1 $(PY) -m pytest -q -p no:cacheprovider || native_rc=$$?; \
	twins_rc=0; wait $$twins || twins_rc=$$?; \
	echo "--- the pure twins' pass (ROCKETQ_NO_EXTENSIONS=1 $(PURE_TESTS)), exit $$twins_rc ---"; \
	cat $$log; rm -f $$log; \
	test $$native_rc -eq 0 && test $$twins_rc -eq 0

# The wire fuzzer against a fresh `rocketq standalone` (docs/reliability.md, "Wire fuzzing"); FRAMES=… to change.
FRAMES ?= 1000000
fuzz: $(STAMP)
	$(PY) -m rocketq.testing.fuzz --frames $(FRAMES)

bench: $(STAMP)
	$(VENV)/bin/rocketq bench standard --embedded --json benchmarks/last-run.json

clean:
	rm -rf $(VENV) .venv-interop build *.egg-info

# The Spark order pipeline (examples/spark_order_pipeline.py) against its own `rocketq standalone`.
.PHONY: pipeline-demo
pipeline-demo: $(STAMP)
	$(PY) examples/spark_order_pipeline.py --standalone
