# Strata build. Everything is bootstrapped from Maven Central and PyPI: sbt's launcher comes through mvn,
# the Python tooling through pip into .venv. `make demo` and `make test` work on a machine with only
# java 17, mvn and python3.

SHELL := /bin/bash
.DEFAULT_GOAL := build

VERSION      := $(shell cat VERSION)
SBT_VERSION  := $(shell sed -n 's/^sbt.version=//p' project/build.properties)
BUILD_DIR    := build
SBT_LAUNCH   := $(BUILD_DIR)/sbt-launch-$(SBT_VERSION).jar
SBT_REPOS    := $(BUILD_DIR)/sbt-repositories
MAVEN_REPO   := $(shell project/maven-repo-url.sh)
PY           ?= python3
VENV         := .venv
VPY          := $(VENV)/bin/python
JAR_SRC      := jvm/spark/target/scala-2.13/strata-spark_2.13-$(VERSION).jar
PKG_JAR      := python/src/strata/jars/strata-spark.jar
WHEEL        := $(BUILD_DIR)/dist/strata-$(VERSION)-py3-none-any.whl
JVM_SOURCES  := $(shell find jvm/log/src/main jvm/spark/src/main -type f 2>/dev/null) build.sbt VERSION project/build.properties
DELTA_VERSION := 4.4.0
PEER_JARS    := $(BUILD_DIR)/peers/delta-spark_4.1_2.13-$(DELTA_VERSION).jar $(BUILD_DIR)/peers/delta-storage-$(DELTA_VERSION).jar
S3PROXY_VERSION := 4.0.0
S3PROXY_JAR  := $(BUILD_DIR)/s3proxy/s3proxy-$(S3PROXY_VERSION)-jar-with-dependencies.jar
S3_TEST_JARS := $(BUILD_DIR)/s3-jars/.fetched
# Test support only (fault-injecting log store for pytest's child drivers), never shipped: see build.sbt, `testkit`.
TESTKIT_JAR  := $(BUILD_DIR)/strata-testkit.jar
TESTKIT_SOURCES := $(shell find jvm/testkit/src/main jvm/log/src/main -type f 2>/dev/null) build.sbt VERSION project/build.properties
PY_SOURCES   := $(shell find python/src -type f -name '*.py' -o -name 'py.typed' 2>/dev/null) python/pyproject.toml python/README.md VERSION

# JVM proxy flags from the usual environment variables, so sbt and the JVMs it starts take the route mvn takes.
define proxy_opts
$(shell for v in "$${https_proxy:-$$HTTPS_PROXY}:https" "$${http_proxy:-$$HTTP_PROXY}:http"; do \
  url=$${v%:*}; scheme=$${v##*:}; [ -n "$$url" ] || continue; hp=$${url#*://}; hp=$${hp#*@}; hp=$${hp%%/*}; \
  printf -- '-D%s.proxyHost=%s -D%s.proxyPort=%s ' $$scheme $${hp%%:*} $$scheme $${hp##*:}; done)
endef

SBT_OPTS ?= -Xmx3g -Xss4m
SBT := java $(SBT_OPTS) $(call proxy_opts) \
  -Dsbt.repository.config=$(SBT_REPOS) -Dsbt.override.build.repos=true \
  -Dsbt.server.autostart=false -Dsbt.supershell=false -Dsbt.color=false -Dsbt.ci=true \
  -jar $(SBT_LAUNCH)

.PHONY: build demo test test-jvm test-log test-python typecheck jar wheel sbt clean bench bench-scale bench-jars peer-jars s3-test-jars testkit

## build: bootstrap sbt, build the connector jar, create .venv and install the strata wheel into it
build: $(VENV)/.installed

## demo: build, then run examples/quickstart.py on local Spark
demo: build
	$(VPY) examples/quickstart.py

## test: build, then run every test (mypy --strict, then scalatest and pytest side by side: each spends much of its
## time waiting on child JVMs and peers, so on 2 cores the pair takes well under the sum; output grouped per suite)
test: build typecheck $(SBT_LAUNCH) $(SBT_REPOS) $(PEER_JARS) $(S3_TEST_JARS) $(S3PROXY_JAR) $(TESTKIT_JAR)
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-jvm test-python

## test-jvm: scalatest of both modules (log, then spark); SUITES="io.strata.log.ConflictMatrixSuite ..." runs only
## those suites, in whichever module holds them (development)
test-jvm: $(SBT_LAUNCH) $(SBT_REPOS) $(S3PROXY_JAR) $(PEER_JARS)
	$(SBT) $(if $(SUITES),"log/testOnly $(SUITES)" "spark/testOnly $(SUITES)",log/test spark/test) < /dev/null

## test-log: the log core's suites alone, on its own class path (no Spark on it)
test-log: $(SBT_LAUNCH) $(SBT_REPOS) $(PEER_JARS)
	$(SBT) log/test < /dev/null

test-python: build $(PEER_JARS) $(S3_TEST_JARS) $(S3PROXY_JAR) $(TESTKIT_JAR)
	$(VENV)/bin/pytest -q --durations=25 $(if $(PYTESTS),$(PYTESTS),tests)

## testkit: the test-support jar (jvm/testkit: the fault-injecting log store) that pytest's child drivers put on their
## class path beside the connector's jar (tests/streaming_child.py); never in the connector's jar or the wheel.
## Order-only after the connector's jar, so that the two sbt runs never overlap.
testkit: $(TESTKIT_JAR)

$(TESTKIT_JAR): $(SBT_LAUNCH) $(SBT_REPOS) $(TESTKIT_SOURCES) | $(JAR_SRC)
	$(SBT) testkit/package < /dev/null
	cp jvm/testkit/target/scala-2.13/strata-testkit_2.13-$(VERSION).jar $@

## peer-jars: delta-spark from Maven Central, for interoperability tests (never shipped)
peer-jars: $(PEER_JARS)

$(BUILD_DIR)/peers/%.jar:
	@mkdir -p $(BUILD_DIR)/peers
	mvn -q -B dependency:copy -Dartifact=io.delta:$(subst -$(DELTA_VERSION),,$*):$(DELTA_VERSION) -DoutputDirectory=$(BUILD_DIR)/peers
	@test -f $@

## s3-test-jars: for the S3 tests only (never shipped): s3proxy (a local S3 server) and, for pytest's Spark,
## hadoop-aws 3.4.2 with the slim AWS SDK v2 modules S3A uses (project/s3-test-jars.pom.xml) minus what Spark
## already ships (netty, httpclient, slf4j, commons), from Maven Central
s3-test-jars: $(S3_TEST_JARS) $(S3PROXY_JAR)

$(S3PROXY_JAR):
	@mkdir -p $(dir $@)
	mvn -q -B dependency:copy -Dartifact=org.gaul:s3proxy:$(S3PROXY_VERSION):jar:jar-with-dependencies -DoutputDirectory=$(dir $@)
	@test -f $@

$(S3_TEST_JARS): project/s3-test-jars.pom.xml
	@rm -rf $(dir $@) && mkdir -p $(dir $@)
	mvn -q -B -f project/s3-test-jars.pom.xml dependency:copy-dependencies -DincludeScope=runtime -DexcludeGroupIds=io.netty,org.slf4j,commons-codec,commons-logging,org.apache.httpcomponents -DoutputDirectory=$(abspath $(dir $@))
	@touch $@

typecheck: build
	$(VENV)/bin/mypy --strict python/src/strata

jar: $(PKG_JAR)
wheel: $(WHEEL)

$(SBT_LAUNCH):
	@mkdir -p $(BUILD_DIR)
	mvn -q -B dependency:copy -Dartifact=org.scala-sbt:sbt-launch:$(SBT_VERSION) -DoutputDirectory=$(BUILD_DIR)
	@test -f $@

$(SBT_REPOS): project/maven-repo-url.sh
	@mkdir -p $(BUILD_DIR)
	printf '[repositories]\n  local\n  maven-central: %s\n' "$(MAVEN_REPO)" > $@

$(JAR_SRC): $(SBT_LAUNCH) $(SBT_REPOS) $(JVM_SOURCES)
	$(SBT) spark/package < /dev/null
	@touch $@

$(PKG_JAR): $(JAR_SRC)
	@mkdir -p $(dir $@)
	cp $< $@

$(VENV)/.deps: python/requirements-dev.txt
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q -r python/requirements-dev.txt
	@touch $@

$(WHEEL): $(VENV)/.deps $(PKG_JAR) $(PY_SOURCES)
	@rm -rf $(BUILD_DIR)/dist python/build python/src/*.egg-info
	$(VPY) -m build --no-isolation --sdist --wheel --outdir $(BUILD_DIR)/dist python > $(BUILD_DIR)/wheel.log 2>&1 || (cat $(BUILD_DIR)/wheel.log; exit 1)
	@test -f $@

$(VENV)/.installed: $(WHEEL)
	$(VPY) -m pip install -q --force-reinstall --no-deps $(WHEEL)
	@touch $@

## bench: Strata (V1 and V2 paths) against Spark Parquet, delta-spark and Iceberg; not part of `make test`.
## The committed default run took 58.7 minutes on 2 cores, 33 of them delta-spark's (see README).
## SCALE (or BENCH_SCALE) multiplies the rows of the bulk writes (default 0.1; SCALE=1: 20M rows per append);
## ROUNDS (or BENCH_ROUNDS) timed rounds after the warm-up; DML_ROUNDS (or BENCH_DML_ROUNDS) those of workloads 7
## (DELETE/UPDATE/MERGE, default 3: each statement needs a fresh table, built untimed).
## For a quick look after a change (results marked partial): SYSTEMS=strata-v1,strata-v2 WORKLOADS=append,part100.
## Results: bench/results/<date>.json, latest.md, latest.png; a workload with a result set of its own run alone
## (WORKLOADS=zorder, WORKLOADS=streaming: only the applications it needs start) writes into bench/results/<workload>/.
BENCH_SCALE  ?=
BENCH_ROUNDS ?= 5
SCALE        ?= $(BENCH_SCALE)
ROUNDS       ?= $(BENCH_ROUNDS)
DML_ROUNDS   ?= $(BENCH_DML_ROUNDS)
# Peer versions: keep in step with bench/spec.py. delta-spark 4.4.1 is not on Maven Central; 4.4.0 is its newest 4.4.x.
BENCH_DELTA_VERSION   := 4.4.0
BENCH_ICEBERG_VERSION := 1.11.0
BENCH_JARS_DIR := bench/cache/jars
BENCH_JARS := $(BENCH_JARS_DIR)/delta-spark_4.1_2.13-$(BENCH_DELTA_VERSION).jar \
              $(BENCH_JARS_DIR)/delta-storage-$(BENCH_DELTA_VERSION).jar \
              $(BENCH_JARS_DIR)/iceberg-spark-runtime-4.1_2.13-$(BENCH_ICEBERG_VERSION).jar

bench: build bench-jars $(VENV)/.bench-deps
	$(VPY) bench/run.py $(if $(SCALE),--scale $(SCALE)) --rounds $(ROUNDS) $(if $(DML_ROUNDS),--dml-rounds $(DML_ROUNDS)) \
	  $(if $(SYSTEMS),--systems $(SYSTEMS)) $(if $(WORKLOADS),--workloads $(WORKLOADS))

## bench-scale: metadata at scale (issue 23; bench/scale.py), apart from `make bench`: a synthetic log of F live files
## (commit 0 + Strata's checkpoint, cached in bench/cache/scale/<F>/), read and appended to by Strata and delta-spark,
## each in a fresh application with 2g of driver memory. FILES: comma-separated F values (default 100000,1000000; small
## ones such as FILES=2000,20000 for a quick look); OP_TIMEOUT: seconds per operation (default 600).
## Results: bench/results/scale/<date>.json and latest.md.
## SCALE=1: the distributed-state run (issue 23): F = 10,000,000 (FILES overrides), a checkpoint-only log of 10 parts
## written by a Spark job (bench/scale_checkpoint.py), Strata with spark.strata.state.distributedThreshold.files=0;
## results in bench/results/scale-distributed/. BENCH_SCALE_ARGS: more bench/scale.py flags (--layout, --state, ...).
FILES      ?=
OP_TIMEOUT ?=
bench-scale: build $(BENCH_JARS_DIR)/delta-spark_4.1_2.13-$(BENCH_DELTA_VERSION).jar $(BENCH_JARS_DIR)/delta-storage-$(BENCH_DELTA_VERSION).jar
	SCALE=$(SCALE) $(VPY) bench/scale.py $(if $(FILES),--files $(FILES)) $(if $(OP_TIMEOUT),--timeout $(OP_TIMEOUT)) \
	  $(BENCH_SCALE_ARGS)

## bench-jars: the benchmark's peer jars (one artifact each, no dependencies) from Maven Central into bench/cache/jars
bench-jars: $(BENCH_JARS)

define bench_fetch
@mkdir -p $(BENCH_JARS_DIR)
mvn -q -B dependency:copy -Dartifact=$(1) -DoutputDirectory=$(BENCH_JARS_DIR)
@test -f $@
endef

$(BENCH_JARS_DIR)/delta-spark_4.1_2.13-$(BENCH_DELTA_VERSION).jar:
	$(call bench_fetch,io.delta:delta-spark_4.1_2.13:$(BENCH_DELTA_VERSION))

$(BENCH_JARS_DIR)/delta-storage-$(BENCH_DELTA_VERSION).jar:
	$(call bench_fetch,io.delta:delta-storage:$(BENCH_DELTA_VERSION))

$(BENCH_JARS_DIR)/iceberg-spark-runtime-4.1_2.13-$(BENCH_ICEBERG_VERSION).jar:
	$(call bench_fetch,org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:$(BENCH_ICEBERG_VERSION))

$(VENV)/.bench-deps: bench/requirements.txt $(VENV)/.deps
	$(VPY) -m pip install -q -r bench/requirements.txt
	@touch $@

## sbt: an sbt shell with the same bootstrap (for development)
sbt: $(SBT_LAUNCH) $(SBT_REPOS)
	java $(SBT_OPTS) $(call proxy_opts) -Dsbt.repository.config=$(SBT_REPOS) -Dsbt.override.build.repos=true -jar $(SBT_LAUNCH)

clean:
	rm -rf $(BUILD_DIR) jvm/log/target jvm/spark/target jvm/testkit/target target project/target project/project python/src/strata/jars $(VENV)
