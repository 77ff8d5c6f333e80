# cronhook — the commands in the README. Every target installs what it needs itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STAGE ?= dev
# No region is forced here: deploy and rollback use --region, AWS_REGION, AWS_DEFAULT_REGION
# or the profile's region, in that order (infra/deploy.py); package needs none.

.PHONY: run test soak lint unit bench mutants package deploy rollback clean

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m devstack.stack

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy chalicelib devstack cronhook_cli app.py
	$(BIN)/python -m tools.check_house
	$(BIN)/python -m tools.tree --check

# Two workers (pytest-xdist): most tests wait on a server or a local stack, and CI has two
# cores. Tests that share a stack, a browser or infra's deployment stay on one worker
# (tests/conftest.py). TEST_WORKERS=0 runs them in this process, one after another.
TEST_WORKERS ?= 2
test: $(STAMP) lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not soak"

# The long soaks (10 % injected faults over 1,000 fires, 20 concurrent heartbeats, a
# 200-webhook burst, the OpenAPI fuzz): about 9 minutes of CPU. .ci/run runs them too.
soak: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m soak

bench: $(STAMP)
	$(BIN)/python -m bench.run

# Plants each named bug of the fire path in a copy of the tree; the reliability suite
# must catch every one (prints caught/total).
mutants: $(STAMP)
	$(BIN)/python -m bench.mutants

package: $(STAMP)
	$(BIN)/python -m infra.package --stage $(STAGE)

# e.g. make deploy STAGE=dev DEPLOY_ARGS="--param AlarmEmail=ops@example.com --create-root-key"
deploy: package
	$(BIN)/python -m infra.deploy --stage $(STAGE) $(DEPLOY_ARGS)

# Redeploy the release before the current one (kept in the artifact bucket; docs/deploy.md).
rollback: $(STAMP)
	$(BIN)/python -m infra.deploy --stage $(STAGE) --rollback $(DEPLOY_ARGS)

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache .mypy_cache
