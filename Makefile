# callgate: `make run` starts the sidecar with the example tools; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROTO_SRC := $(shell find proto -name '*.proto')
PROTO_OUT := gateway/_proto/callgate/v1/gateway_pb2.py
NODE_STAMP := clients/node/node_modules/.installed
LINTED := gateway adapters tests bench examples scripts

.PHONY: setup proto bytecode run test regression fuzz lint bench bench-audit bench-mcp bench-instructions client-dist clean

setup: $(STAMP) $(PROTO_OUT) $(NODE_STAMP) bytecode

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

$(PROTO_OUT): $(PROTO_SRC) scripts/gen_protos.py $(STAMP)
	$(PY) scripts/gen_protos.py

# the Node.js loop client the tests run (proves a non-Python client works from the proto)
$(NODE_STAMP): clients/node/package-lock.json
	cd clients/node && npm ci --no-audit --no-fund --loglevel=error
	touch $@

proto: $(STAMP)
	$(PY) scripts/gen_protos.py

# the modules' bytecode, compiled ahead (only what changed; quick): where the environment sets
# PYTHONDONTWRITEBYTECODE, Python never caches it, and every process (each sidecar the tests
# and the benchmark start) compiled every module from source, about 0.25 s of each start-up
bytecode: $(STAMP) $(PROTO_OUT)
	$(PY) -m compileall -q gateway adapters examples > /dev/null

run: $(STAMP) $(PROTO_OUT) bytecode
	$(PY) -m examples.devrun

test: lint
	$(PY) -m gateway.cli policy test policies
	$(PY) -m pytest -q -rs

# every regression case of a tool-calling loop × every provider, through the reference loop:
# a table of state, executions, correlation and effect per cell; fails on any ✗ (about a minute)
regression: setup
	$(PY) -m tests.support.matrix

# the property-based fuzz tests with many more examples than `make test` runs (tens of minutes)
fuzz: setup
	$(PY) -m pytest -q --hypothesis-profile=fuzz tests/adapters/test_fuzz_adapters.py \
		tests/scenarios/test_fuzz_sidecar.py tests/gateway/tools/test_metaschema.py

lint: setup
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)
	$(PY) -m mypy
	$(PY) -m vulture

bench: setup
	$(PY) -m bench.run
	$(PY) -m bench.mcp

# an MCP read through callgate vs straight to the server (under a minute)
bench-mcp: setup
	$(PY) -m bench.mcp

# instructions per request under valgrind's callgrind: what metrics and tracing add (a few
# minutes; needs valgrind)
bench-instructions: setup
	$(PY) -m bench.instructions

# the audit trail: QueryAudit among a million records, the append per decision (about 2 min)
bench-audit: setup
	$(PY) -m bench.audit

# the callgate-client wheel (client and reference loop, grpcio/grpcio-status/protobuf only)
client-dist: setup
	$(PY) scripts/build_client.py --out dist

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
