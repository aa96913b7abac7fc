# The two set-up commands: `make run` and `make test`. Both create/refresh .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# `make run` needs rocketq alone (orjson, uvloop): not the test and Spark extras (pytest, mypy, PySpark ~690 MB)
RUN_STAMP := $(VENV)/.installed-run
SOURCES := pyproject.toml setup.py src/rocketq/store/_appendcodec_c.c src/rocketq/store/_plainrun_c.c \
		src/rocketq/store/_storecodec.h src/rocketq/protocol/_pullcodec_c.c \
		src/rocketq/protocol/_framecodec_c.c src/rocketq/protocol/_slots.h src/rocketq/protocol/_jsonwrite.h src/rocketq/protocol/_sendreply.h \
		src/rocketq/protocol/_headercodec_c.c src/rocketq/client/_batchcodec_c.c \
		src/rocketq/broker/messaging/_plainsend_c.c src/rocketq/client/_sendext_c.c \
		src/rocketq/client/_gather_c.c

.PHONY: run test lint typecheck venv interop-venv interop-v5 interop-java interop-go browser bench fuzz clean

$(RUN_STAMP): $(SOURCES)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(RUN_STAMP)

# everything `make test` needs; it includes what `make run` needs
$(STAMP): $(SOURCES)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,spark,bench]'
	touch $(STAMP) $(RUN_STAMP)

venv: $(STAMP)

interop-venv:
	bash scripts/interop-venv.sh

# Apache RocketMQ's official 5.x gRPC clients, each in its own environment (tests/interop/v5): Python 5.1.2 in
# .venv-v5py, Node.js 1.0.8 in ~/.cache/rocketq/node5.
interop-v5:
	bash scripts/v5-python-venv.sh
	bash scripts/v5-node-client.sh

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

# The suite in two halves side by side, then the pure twins of the compiled codecs (as aiokafka's CI does with
# AIOKAFKA_NO_EXTENSIONS). The halves split where no session fixture is shared: the interoperability and console
# tests (the Java brokers, the C++/Go/5.x clients, the run's one Chromium) in one process, everything else (the
# unit, integration, deployment and Spark tests: the run's one SparkSession) in the other. The twins' pass
# covers the unit tests (each codec's twin parity tests among them), the broker's end-to-end tests (every frame,
# header, pull and append codec on the wire) and the wire fuzzer (malformed frames through the pure decoders);
# the client, name-server, security, replication and command-line suites cross no other codec path, so they run
# once. It runs niced beside the others: the suite spends most of its time waiting on servers, JVMs and child
# processes, and the three together fit the 15 minutes. Each pass's output follows the first half's.
PURE_TESTS = tests/unit tests/integration/broker tests/integration/test_wire_fuzz.py
INTEROP_TESTS = tests/interop tests/console
CORE_TESTS = tests/unit tests/integration tests/deploy tests/spark
PYTEST = $(PY) -m pytest -q -p no:cacheprovider
test: $(STAMP) interop-venv interop-v5 interop-java interop-go browser lint typecheck
	@twins_log=$$(mktemp); core_log=$$(mktemp); \
	ROCKETQ_NO_EXTENSIONS=1 nice -n 10 $(PYTEST) $(PURE_TESTS) >$$twins_log 2>&1 & twins=$$!; \
	ROCKETQ_REQUIRE_NATIVE=1 $(PYTEST) $(CORE_TESTS) >$$core_log 2>&1 & core=$$!; \
	echo "ROCKETQ_REQUIRE_NATIVE=1 pytest $(INTEROP_TESTS)  (beside it: ROCKETQ_REQUIRE_NATIVE=1 pytest $(CORE_TESTS); ROCKETQ_NO_EXTENSIONS=1 pytest $(PURE_TESTS))"; \
	interop_rc=0; ROCKETQ_REQUIRE_NATIVE=1 $(PYTEST) $(INTEROP_TESTS) || interop_rc=$$?; \
	core_rc=0; wait $$core || core_rc=$$?; \
	echo "--- the core half (ROCKETQ_REQUIRE_NATIVE=1 $(CORE_TESTS)), exit $$core_rc ---"; cat $$core_log; \
	twins_rc=0; wait $$twins || twins_rc=$$?; \
	echo "--- the pure twins' pass (ROCKETQ_NO_EXTENSIONS=1 $(PURE_TESTS)), exit $$twins_rc ---"; cat $$twins_log; \
	rm -f $$twins_log $$core_log; \
	test $$interop_rc -eq 0 && test $$core_rc -eq 0 && test $$twins_rc -eq 0

# The wire fuzzer against a fresh `rocketq standalone` (docs/reliability.md, "Wire fuzzing"); FRAMES=… to change.
FRAMES ?= 1000000
fuzz: $(STAMP)
	$(PY) -m rocketq.testing.fuzz --frames $(FRAMES)

# the standard scenarios, then rocketq beside its peers in one run: Redis 7 Streams (Debian's redis-server:
# apt-get install redis-server) and Apache RocketMQ's Java 4.9.7 broker (jars from Maven, interop-java)
# (the optional peers, NATS JetStream and RabbitMQ for the SYNC_FLUSH row, are the script's --peers/--scenarios)
bench: $(STAMP) interop-java
	$(VENV)/bin/rocketq bench standard --embedded --json benchmarks/last-run.json
	PYTHONPATH=src $(PY) benchmarks/peer_compare.py --json benchmarks/last-peers.json

clean:
	rm -rf $(VENV) .venv-interop .venv-v5py build *.egg-info

# The Spark order pipeline (examples/spark_order_pipeline.py) against its own `rocketq standalone`.
.PHONY: pipeline-demo
pipeline-demo: $(STAMP)
	$(PY) examples/spark_order_pipeline.py --standalone
