# Tabula's build. `make run` starts the dev cluster; `make test` is what CI runs.
GO ?= go
export PATH := /usr/local/go/bin:$(PATH)

.PHONY: all build run test vet proto bench fuzz clean

all: build

build:
	$(GO) build -o bin/tabula ./cmd/tabula

run: build
	./bin/tabula dev

vet:
	$(GO) vet ./...

# The whole suite with the race detector; e2e tests build and run real processes.
test: vet
	$(GO) test -race -timeout 25m ./...

# Short fuzzing of every decoder (the seed corpora also run in `make test`).
fuzz:
	$(GO) test ./cell -run '^$$' -fuzz FuzzDecodeKey -fuzztime 30s

clean:
	rm -rf bin
