# The two commands a newcomer needs: `make run` (the whole system on the emulators) and `make test`.
GO ?= go
LOCALSTACK := bin/localstack
BENCH := bin/bench
# The app side (web/): firebase-tools (the Auth emulator), the Firebase JS SDK, the example app's
# bundle and the browser test's driver, installed from web/package-lock.json. --ignore-scripts: none of
# them needs its install script here (re2's would try to download or compile an optional binary).
WEB_DEPS := web/node_modules/.package-lock.json
WEB_APP := web/dist/app.js

.PHONY: run test fuzz build vet publish bench check-deploy clean web generate rules

## build: compile the local stack (it serves every function and starts the emulators)
build:
	$(GO) build -o $(LOCALSTACK) ./cmd/localstack

## run: run every function at http://127.0.0.1:$${PORT:-8080}/<EntryPoint> on the Firestore, Pub/Sub and
##      Firebase Auth emulators, with firestore.example-app.rules loaded (the example app's rules and the counters' block), and the live example app at http://127.0.0.1:$${APP_PORT:-8000}/
run: build $(WEB_APP)
	$(LOCALSTACK)

## web: install web/'s npm packages (npm ci) and build the example app's bundle
web: $(WEB_APP)

$(WEB_DEPS): web/package.json web/package-lock.json
	npm ci --prefix web --ignore-scripts --no-audit --no-fund
	@touch $@

$(WEB_APP): $(WEB_DEPS) web/build.mjs $(wildcard web/src/*.js web/client/*.js)
	npm run --prefix web build

## publish: publish increments to the local stack's topic (the Pub/Sub emulator of `make run`), e.g.
##          make publish ARGS='-key order-42 -times 3 likes:5'   (a real project: go run ./cmd/publish -project P ...)
publish:
	PUBSUB_EMULATOR_HOST=$${PUBSUB_EMULATOR_HOST:-127.0.0.1:$${PUBSUB_PORT:-8085}} $(GO) run ./cmd/publish $(ARGS)

## bench: the load harness on the local stack (see docs/performance.md). Without ARGS, the default
##        comparison set (about 40 minutes), each report in bench/<name>/report.md (with plots):
##        modes (guide vs group commit), instances (K=1,4,8,16 at 2,000/s offered, pinned vs adaptive shards), faults (a fault
##        proxy between the functions and Firestore), ingest (HTTP vs Pub/Sub), counters (1, 100 and 1,000
##        counters at 1,000/s, spread evenly and by Zipf), documents (likes created and deleted straight in Firestore
##        at 1,000/s over 100 posts, every event delivered twice: collection counters vs Firebase's write-time
##        aggregation), fields (the same likes flat, counted by their postId field, a third of the changes moving
##        a like to another post, at 500/s, beside nested ones), viral (one post's likes changing 300 times a second over 8 instances, its events
##        delivered once and twice). With ARGS, one
##        invocation: make bench ARGS='-modes group-commit -instances 4 -duration 30s'
bench: build $(WEB_APP)
	$(GO) build -o $(BENCH) ./cmd/bench
ifeq ($(strip $(ARGS)),)
	@status=0; \
	$(BENCH) -out bench/modes -duration 30s || status=1; \
	$(BENCH) -out bench/instances -modes group-commit,adaptive -instances 1,4,8,16 -clients 800 -rate 2000 -duration 30s || status=1; \
	$(BENCH) -out bench/faults -modes group-commit -instances 2 -duration 20s -keyed-fraction 0.5 -faults 'none;reset=0.02;drop=0.02' || status=1; \
	$(BENCH) -out bench/ingest -via http,pubsub -modes group-commit -duration 10s -messages 3000 || status=1; \
	$(BENCH) -out bench/counters -modes adaptive -clients 400 -rate 1000 -duration 20s -counters 1,100,1000 -zipf 0,1.1 || status=1; \
	$(BENCH) -out bench/documents -via documents -modes collection,write-time -clients 400 -rate 1000 -parents 100 -copies 2 -duration 20s || status=1; \
	$(BENCH) -out bench/fields -via documents -modes collection,field -clients 400 -rate 500 -parents 100 -copies 2 -duration 20s || status=1; \
	$(BENCH) -out bench/viral -via documents -modes collection -parents 1 -likers 5000 -instances 8 -clients 200 -rate 300 -copies 1 -duration 30s || status=1; \
	$(BENCH) -out bench/viral-copies-2 -via documents -modes collection -parents 1 -likers 5000 -instances 8 -clients 200 -rate 300 -copies 2 -duration 30s || status=1; \
	if [ $$status -ne 0 ]; then echo "make bench: an exact count check failed (see the reports' \"exact count check\" row)"; fi; \
	exit $$status
else
	$(BENCH) $(ARGS)
endif

## rules: add the counters' security rules to your app's ruleset, e.g.
##        make rules APP_RULES=../app/firestore.rules [VARIANT=guide-clients|extension-clients | BLOCK=my.rules] [OUT=combined.rules]
##        writes OUT (default firestore.combined.rules; it may be APP_RULES itself), or refuses, naming
##        each line of APP_RULES whose allows already reach the counters' paths (docs/api.md, "Security rules");
##        with REMOVE=1, writes OUT as APP_RULES without the counters' block (your app's rules as they were);
##        COUNTERS_COLLECTION=... (ROLLUPS_, TOPS_, DEDUPE_) name the collections as the deployment does
VARIANT ?= counters
OUT ?= firestore.combined.rules
rules:
	@test -n "$(APP_RULES)" || { echo "make rules: APP_RULES=<your app's rules file> is required"; exit 2; }
	$(GO) run ./cmd/rules -app $(APP_RULES) $(if $(REMOVE),-remove,$(if $(BLOCK),-block $(BLOCK),-variant $(VARIANT))) -o $(OUT)

## generate: write scripts/deployment.gen.sh, terraform/deployment.gen.tf.json and docs/settings.md from
##           the Go declarations of the functions and settings (internal/manifest/deployment.go, functions/config),
##           and the rulesets of a database of its own (firestore*.rules) from the blocks in rules/
generate:
	$(GO) generate ./...

# The Go client is a module of its own (client/go.mod), in go.work with the root: ./... does not
# reach it, so every go command that means "all the Go code" names both.
GO_PACKAGES := ./... ./client/...

## vet: static checks
vet:
	$(GO) vet $(GO_PACKAGES)

## test: go vet, then every test against real emulators started once for the run (the JS SDK and
##       browser tests in web/test run inside it, from internal/webtest). The slowest package takes
##       about 3 minutes; 15 minutes per package makes a hang fail the run, not eat CI's 90.
##       ALONE_TESTS (in ALONE_PACKAGES), which bound latencies end to end, run after the others, one
##       package at a time, so that other packages' load does not make them measure the machine
##       instead of the code (the example app's live roll-up, and the Emulator Suite loop's, failed in
##       CI under that load).
##       Then each fuzz target of functions/ (fuzz_test.go) runs FUZZ_EXECS inputs on the same stack.
ALONE_TESTS := ^(TestRollupsOfManyWarmCounters|TestExampleAppInChromium|TestAppEmulatorSuiteLoop)$$
ALONE_PACKAGES := ./internal/e2e/ ./internal/webtest/ ./internal/quickstart/
test: vet build $(WEB_APP)
	$(LOCALSTACK) exec -- sh -c '$(GO) test -count=1 -timeout 15m -skip "$(ALONE_TESTS)" $(GO_PACKAGES) && \
		$(GO) test -count=1 -p 1 -timeout 15m -run "$(ALONE_TESTS)" $(ALONE_PACKAGES) && $(call fuzz-each,$(FUZZ_EXECS))'

## fuzz: every fuzz target of functions/ for FUZZTIME each (default 1m), on the local stack's emulators
fuzz: build
	$(LOCALSTACK) exec -- sh -c '$(call fuzz-each,$(FUZZTIME))'

FUZZ_EXECS ?= 2000x
FUZZTIME ?= 1m
# fuzz-each runs every Fuzz target of functions/ (as go test -list names them) for $(1) each: a
# duration, or a number of inputs (2000x), which never stops before the targets have started.
fuzz-each = for t in $$($(GO) test -list "^Fuzz" ./functions/ | grep "^Fuzz"); do \
	echo "fuzz $$t for $(1)"; $(GO) test -run "^$$" -fuzz "^$$t$$" -fuzztime $(1) ./functions/ || exit 1; done

## check-deploy: shellcheck the scripts; terraform fmt -check when a terraform binary is on PATH
## (gcloud's parser over deploy.sh's commands and the provider schema check run with `make test`)
check-deploy:
	shellcheck scripts/*.sh .ci/run
	@if command -v terraform >/dev/null 2>&1; then \
		terraform fmt -check -recursive terraform; \
	else \
		echo "check-deploy: no terraform binary on PATH; terraform fmt -check skipped"; \
	fi

clean:
	rm -rf bin .localstack bench web/dist web/test-results
