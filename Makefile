# The two commands a newcomer needs: `make run` (the whole system on the emulators) and `make test`.
GO ?= go
LOCALSTACK := bin/localstack

.PHONY: run test build vet publish bench check-deploy clean

## build: compile the local stack (it serves every function and starts the emulators)
build:
	$(GO) build -o $(LOCALSTACK) ./cmd/localstack

## run: run every function at http://127.0.0.1:$${PORT:-8080}/<EntryPoint> on the Firestore and Pub/Sub emulators
run: build
	$(LOCALSTACK)

## publish: publish increments to the local stack's topic (the Pub/Sub emulator of `make run`), e.g.
##          make publish ARGS='-key order-42 -times 3 likes:5'   (a real project: go run ./cmd/publish -project P ...)
publish:
	PUBSUB_EMULATOR_HOST=$${PUBSUB_EMULATOR_HOST:-127.0.0.1:$${PUBSUB_PORT:-8085}} $(GO) run ./cmd/publish $(ARGS)

## bench: the load harness, guide mode and group commit side by side on the local stack; report in
##        bench/report.md and bench/report.json. Flags: make bench ARGS='-clients 64 -duration 60s -counters 1 -shards 10'
bench: build
	$(GO) run ./cmd/bench $(ARGS)

## vet: static checks
vet:
	$(GO) vet ./...

## test: go vet, then every test against real emulators started once for the run
test: vet build
	$(LOCALSTACK) exec -- $(GO) test -count=1 -timeout 45m ./...

## check-deploy: shellcheck the scripts; terraform fmt -check when a terraform binary is on PATH
## (the Go consistency test of scripts/ and terraform/ against the code runs with `make test`)
check-deploy:
	shellcheck scripts/*.sh .ci/run
	@if command -v terraform >/dev/null 2>&1; then \
		terraform fmt -check -recursive terraform; \
	else \
		echo "check-deploy: no terraform binary on PATH; terraform fmt -check skipped"; \
	fi

clean:
	rm -rf bin .localstack bench
