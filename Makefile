# The two commands a newcomer runs: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS ?= dev,grpc,openai,anthropic,server

.PHONY: demo test lint venv clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[$(EXTRAS)]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m verdict.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check . || true

# pytest exits 5 when it collected nothing: that is a failure, never a silent pass.
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi; exit $$rc

clean:
	rm -rf $(VENV) .pytest_cache
