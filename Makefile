# Entry points. Every target that needs the environment depends on `setup`, which is idempotent
# and takes a few seconds once done: .venv + pinned packages, a Docker engine, the sandbox image, and
# (best effort) bubblewrap for the second sandbox backend.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)

# make serve: the few settings people change; every other flag of `python -m verifiers.fronts.server` (the
# limits: `--help` lists them, docs/serve.md explains them) goes through ARGS='…', as for train and eval
HOST ?= 127.0.0.1
PORT ?= 50051
REGISTRY ?= var/registry.sqlite
POOL ?= 0
BACKEND ?=
HTTP_PORT ?=
REWARD_VERIFIER ?=
PYTEST_ARGS ?=
# make test runs the suite on this many pytest-xdist workers, a test file per worker at a time (0: in one process); 3 on
# 2 cores: the suite waits on sandboxes and servers (921 s against 1035 s with 2, bench/results/suite_time.txt)
TEST_WORKERS ?= 3
# Set by `make test` (target-specific, so its installs see it): a part that cannot be installed fails the
# run instead of printing a note. `make setup` alone stays best effort (serving needs only Docker).
REQUIRE_PARTS ?=
PART_MISSING = $(if $(REQUIRE_PARTS),exit 1,true)

# torch's OpenMP threads sleep when idle instead of spinning (set it in the environment to choose otherwise): the
# trainer shares the CPUs with the verifier service and its sandboxes, and spinning threads took the cores those
# waited for: a make train step 3.9-4.3 s with the default policy against 0.34-0.36 s passive on a loaded 2-core
# machine (bench/results/alarm_cost.txt); not measured on an idle one
OMP_WAIT_POLICY ?= PASSIVE
export OMP_WAIT_POLICY

# make train / make eval knobs (empty = the embedded default); ARGS: raw extra arguments appended
# TASK=tools: the embedded tool task (configs/tools.yaml: products worked out with a Python call, GRPO with tools in
# sandbox sessions, then the same budget without tools); CONFIG=... wins over TASK
TASK ?=
TASKS := default tools
CONFIG ?=
MODEL ?=
DATA ?=
EVAL_DATA ?=
VERIFIER ?=
TARGET ?=
SEED ?=
RUNS ?=
COMPLETIONS ?=
K ?=
LIMIT ?=
OUT ?=
SUITE ?=
ARGS ?=
# make audit: the run folder (default $(RUNS)/latest, RUNS defaulting to runs)
RUN ?=
# NAME only from the make command line (`make train NAME=x`): shells such as WSL's export NAME=<hostname>
RUN_NAME := $(if $(filter command line,$(origin NAME)),$(NAME))

.PHONY: help setup venv docker image image-langs bwrap podman postgres service-image proto serve test parts test-fast lint format train r1 eval audit bench clean

help:
	@echo "make setup      venv + packages, Docker engine, sandbox image, bubblewrap and Podman if it can (idempotent; every target runs it)"
	@echo "make venv       only .venv with the pinned packages (part of setup)"
	@echo "make train      train the embedded default (or TASK=tools, MODEL=… DATA=… EVAL_DATA=… VERIFIER=… CONFIG=… SEED=… NAME=… RUNS=… TARGET=… NPROC=…)"
	@echo "                ARGS='--grpo.steps 20 …': any config key or flag of trainer.pipelines.make_train (docs/train.md)"
	@echo "make r1         the R1 pipeline: cold-start SFT -> RL -> rejection sampling -> SFT -> RL (CONFIG=… SEED=… OUT=… TARGET=…; resumable per stage)"
	@echo "                ARGS='…': any flag of trainer.pipelines.r1"
	@echo "make eval       evaluate runs/latest (or MODEL=… / COMPLETIONS=… DATA=… SUITE=… VERIFIER=… K=… LIMIT=… OUT=… RUNS=… TARGET=…)"
	@echo "                ARGS='…': any flag of trainer.evaluation.evaluate (docs/eval.md)"
	@echo "make audit      re-grade a run's saved completions through the audit and print the report (RUN=runs/<name> TARGET=…)"
	@echo "                ARGS='…': any flag of trainer.alarm.audit_run"
	@echo "make serve      the verifier service on HOST:PORT (default 127.0.0.1:50051; REGISTRY=… POOL=… BACKEND=… HTTP_PORT=8080 REWARD_VERIFIER=…)"
	@echo "                ARGS='--memory-mb 2048 …': any other flag of verifiers.fronts.server, the limits included (docs/serve.md)"
	@echo "make test       the whole test suite (Docker and gRPC tests included); PYTEST_ARGS='-k math' to select, TEST_WORKERS=3 workers (0: one process)"
	@echo "make parts      what this machine has of the parts the tests need"
	@echo "make test-fast  only the tests that need no Docker and are not marked slow (PYTEST_ARGS=…)"
	@echo "make image      build the sandbox image offline (debootstrap + docker import); LANGS=all adds the toolchain image"
	@echo "make image-langs  build only the toolchain image (C, C++, Java, Node, Go, Rust and more)"
	@echo "make docker     make sure a Docker engine answers (installs/starts dockerd as root)"
	@echo "make bwrap      install bubblewrap (second sandbox backend) if missing; a note, not an error, if it cannot"
	@echo "make podman     install rootless Podman (--backend podman) and load the sandbox image into it; a note if it cannot"
	@echo "make service-image  build the service image offline (rlvr-service:<hash>; server as uid 10001; deploy/README.md)"
	@echo "make postgres   install PostgreSQL if missing (the registry tests start a throwaway cluster); a note, not an error, if it cannot"
	@echo "make proto      regenerate the gRPC stubs from proto/verifier/v1/verifier.proto"
	@echo "make bench      run the benchmarks in bench/ (prints figures, each against its baseline in the same run)"
	@echo "make lint       ruff check + format check"
	@echo "make format     ruff format + ruff check --fix"
	@echo "make clean      remove sandbox containers and var/tmp"
	@echo "make help       this list (every target; details: docs/setup.md)"

setup: venv docker image bwrap podman

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || { echo "== creating $(VENV)"; $(PYTHON) -m venv $(VENV); }
	@$(PY) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 needed: make PYTHON=python3.11"'
	@echo "== installing the project and its pinned dependencies into $(VENV)"
	@bash deploy/install_venv.sh $(PY) '.[dev,lora]'
	@rm -f $(VENV)/.installed-*
	@touch $@

docker:
	@bash sandbox/host/docker_engine.sh

# LANGS=all: also rlvr-sandbox-langs (sandbox/image/langs.py), the image non-Python code runs in
LANGS ?= python
image: venv docker
	@$(PY) -m sandbox.image
	@if [ "$(LANGS)" = all ]; then $(PY) -m sandbox.image.langs; fi

# The tests grade every language, so `make test` builds (once; cached by its inputs) the toolchain image
image-langs: venv docker
	@$(PY) -m sandbox.image.langs

# Best effort for `make setup` (required by `make test`): the Docker backend is the default, so a machine without bubblewrap (or without user
# namespaces) still sets up; the note says why and where the log is.
bwrap: venv
	@mkdir -p var/log
	@sh sandbox/host/install_bwrap.sh >var/log/install_bwrap.log 2>&1 && grep -q '^bwrap backend: usable' var/log/install_bwrap.log \
	  || { echo "$(if $(REQUIRE_PARTS),error,note): bubblewrap sandbox backend not available ($$(tail -n 1 var/log/install_bwrap.log | cut -c1-160)); log: var/log/install_bwrap.log"; $(PART_MISSING); }

# Best effort like bwrap (required by `make test`): rootless Podman (sandbox/backends/podman.py; as root it runs as the user rlvr-podman),
# the sandbox image loaded into it offline from Docker's copy. Once done it only checks (under a second).
podman: venv image
	@mkdir -p var/log
	@sh sandbox/host/install_podman.sh >var/log/install_podman.log 2>&1 && grep -q '^podman backend: usable' var/log/install_podman.log \
	  || { echo "$(if $(REQUIRE_PARTS),error,note): podman sandbox backend not available ($$({ grep '^podman backend' var/log/install_podman.log || tail -n 1 var/log/install_podman.log; } | cut -c1-160)); log: var/log/install_podman.log"; $(PART_MISSING); }

# The verifier service as one image, built offline like the sandbox image (deploy/service_image.py);
# docker-compose (Debian's) for deploy/compose.yaml and its test (best effort; required by `make test`).
service-image: venv image
	@$(PY) -m deploy.service_image
	@command -v docker-compose >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] \
	  || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker-compose >/dev/null 2>&1 \
	  || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker-compose >/dev/null 2>&1; } \
	  || { echo "$(if $(REQUIRE_PARTS),error,note): docker-compose not installed (apt-get install docker-compose): the compose failover test needs it"; $(PART_MISSING); }
	@command -v docker-compose >/dev/null 2>&1 || { echo "$(if $(REQUIRE_PARTS),error,note): docker-compose is not on PATH"; $(PART_MISSING); }

# PostgreSQL binaries for the registry tests on the shared (postgresql://) backend (best effort; required
# by `make test`). The tests start their own throwaway cluster (initdb in a temp dir, loopback port).
postgres:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" != 0 ] && ! sudo -n true 2>/dev/null; then \
	  echo "$(if $(REQUIRE_PARTS),error,note): PostgreSQL not installed and no root to install it (apt-get install postgresql)"; $(PART_MISSING); \
	else mkdir -p var/log; S=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); export DEBIAN_FRONTEND=noninteractive; \
	  { $$S apt-get install -y -q --no-install-recommends postgresql || { $$S apt-get update -q && $$S apt-get install -y -q --no-install-recommends postgresql; }; } \
	    >var/log/install_postgres.log 2>&1 \
	  || { echo "$(if $(REQUIRE_PARTS),error,note): could not install PostgreSQL (log: var/log/install_postgres.log)"; $(PART_MISSING); }; fi

proto: venv
	$(PY) -m grpc_tools.protoc -I . --python_out=. --pyi_out=. --grpc_python_out=. proto/verifier/v1/verifier.proto

# the server's flags, one line when echoed (a recipe's continuation lines echo as they are written: an
# empty $(if ...) left lines holding only a backslash)
SERVE_ARGS = --host $(HOST) --port $(PORT) --registry $(REGISTRY) --pool-size $(POOL) $(if $(BACKEND),--backend $(BACKEND)) \
	$(if $(HTTP_PORT),--http-port $(HTTP_PORT)) $(if $(REWARD_VERIFIER),--reward-verifier $(REWARD_VERIFIER)) $(ARGS)

serve: setup
	$(PY) -m verifiers.fronts.server $(strip $(SERVE_ARGS))

# `make test` requires every part tests/parts.py lists (the three sandbox backends, PostgreSQL,
# docker-compose, the images): an install that fails stops it, naming the part, and `parts` checks
# them all before pytest starts. Only the declared optional parts (a GPU, vLLM) may be skipped: with
# RLVR_REQUIRE_PARTS=1, any other skip fails the run (tests/conftest.py); -rs prints each with its reason.
test: REQUIRE_PARTS := 1
test: setup image-langs postgres service-image
	@$(PY) -m tests.parts
	RLVR_REQUIRE_PARTS=1 $(PY) -m pytest -rs -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# What this machine has of the parts the tests need (`make test` runs it after its installs)
parts: venv
	@$(PY) -m tests.parts

test-fast: venv
	$(PY) -m pytest -m "not docker and not slow" $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# NPROC=N (N > 1): data-parallel GRPO, `torchrun --standalone --nproc_per_node N -m trainer.train` on CONFIG
# (a GRPOConfig YAML with model: and data:) against a running service (TARGET=host:port[,host:port]); see docs/scale.md
NPROC ?=
train: setup
	$(if $(filter-out 1,$(NPROC)),$(VENV)/bin/torchrun --standalone --nproc_per_node $(NPROC) -m trainer.train \
	  $(if $(CONFIG),--config $(CONFIG)) $(if $(MODEL),--model $(MODEL)) $(if $(DATA),--data $(DATA)) \
	  $(if $(VERIFIER),--verifier $(VERIFIER)) $(if $(TARGET),--target $(TARGET)) $(if $(SEED),--seed $(SEED)) \
	  $(ARGS),$(PY) -m trainer.pipelines.make_train $(if $(CONFIG),--config $(CONFIG),$(if $(TASK),--config \
	  configs/$(if $(filter $(TASK),$(TASKS)),$(TASK),$(error TASK=$(TASK): the embedded tasks are $(TASKS))).yaml)) $(if $(MODEL),--model $(MODEL)) \
	  $(if $(DATA),--data $(DATA)) $(if $(EVAL_DATA),--eval-data $(EVAL_DATA)) $(if $(VERIFIER),--verifier $(VERIFIER)) \
	  $(if $(TARGET),--target $(TARGET)) $(if $(SEED),--seed $(SEED)) $(if $(RUN_NAME),--name $(RUN_NAME)) \
	  $(if $(RUNS),--runs $(RUNS)) $(ARGS))

# the DeepSeek-R1 pipeline (trainer/pipelines/r1.py, configs/r1.yaml); OUT= its folder (default runs/r1-s<seed>); run it
# again after an interruption and finished stages are skipped
r1: setup
	$(PY) -m trainer.pipelines.r1 $(if $(CONFIG),--config $(CONFIG)) $(if $(SEED),--seed $(SEED)) $(if $(OUT),--out $(OUT)) \
	  $(if $(TARGET),--target $(TARGET)) $(ARGS)

eval: setup
	RLVR_FROM_MAKE=eval $(PY) -m trainer.evaluation.evaluate $(if $(MODEL),--model $(MODEL)) $(if $(DATA),--data $(DATA)) \
	  $(if $(COMPLETIONS),--completions $(COMPLETIONS)) $(if $(VERIFIER),--verifier $(VERIFIER)) \
	  $(if $(K),--k $(K)) $(if $(LIMIT),--limit $(LIMIT)) $(if $(OUT),--out $(OUT)) $(if $(SUITE),--suite $(SUITE)) \
	  $(if $(TARGET),--target $(TARGET)) $(if $(RUNS),--runs $(RUNS)) $(ARGS)

audit: setup
	$(PY) -m trainer.alarm.audit_run $(if $(RUN),$(RUN),$(or $(RUNS),runs)/latest) $(if $(TARGET),--target $(TARGET)) $(ARGS)

bench: setup
	@$(PY) -c 'import trl' 2>/dev/null || bash deploy/install_venv.sh $(PY) '.[bench]'
	@for b in pool.throughput math_grading.speed math_grading.agreement code_grading.humaneval training.vs_trl; do echo "== python -m bench.$$b"; $(PY) -m bench.$$b || exit 1; done

clean:
	-@ids=$$(docker ps -aq --filter label=rlvr.sandbox 2>/dev/null); [ -z "$$ids" ] || docker rm -f $$ids >/dev/null
	rm -rf var/tmp
