# The targets a Go user expects. hack/run-e2e.sh (faultline e2e) is the main job; these wrap it.
.PHONY: all build test vet fmt e2e e2e-smoke e2e-under-load test-binary test-controls run-controls test-interrupt test-runners test-node-setup clean

all: build test

build:
	go build -o _output/bin/faultline ./cmd/faultline

# One binary with every suite, as Kubernetes ships e2e.test.
test-binary:
	go test -c -o _output/bin/faultline.test ./suites

test:
	go test ./...

vet:
	go vet ./...

fmt:
	gofmt -l -w $$(git ls-files '*.go')

e2e:
	hack/run-e2e.sh

# The negative controls (judge/controls/controls.yaml): every requirement has
# an entry; each recorded control's run (judge/verdicts/testdata) judges its
# requirement red with the named cause, and a recorded mutant leaves every
# other requirement its base verdict; faultline requirements and the reports
# list them. It judges the recorded runs and needs no cluster.
test-controls:
	go test -count=1 -run Controls ./judge/... ./cmd/faultline

# Builds and runs the mutants (every one, or CONTROLS=<regexp> of requirement
# or series) on kind clusters and judges each run as test-controls does;
# RECORD=1 writes each red run to judge/verdicts/testdata. 7 to 10 minutes a
# mutant here (2 cores, warm build cache): not part of .ci/run.
run-controls:
	FAULTLINE_CONTROLS_RUN=1 FAULTLINE_CONTROLS='$(CONTROLS)' FAULTLINE_CONTROLS_RECORD='$(RECORD)' go test -count=1 -timeout 0 -v ./test/controls

e2e-smoke:
	hack/run-e2e.sh --label-filter smoke

# CI's load stage: the idle --runtime all run, then the CRI and NRI suites
# under stress-ng, every cell held to the idle run's.
e2e-under-load:
	hack/run-e2e.sh --runtime all --artifacts _artifacts/idle
	hack/e2e-under-load.sh _artifacts/idle _artifacts/under-load

# A real run, interrupted while kind creates its cluster (needs root and kind).
test-interrupt:
	FAULTLINE_INTERRUPT_TEST=1 go test ./test/interrupt -count=1 -v -timeout 30m

# The conformance image as a Job, under sonobuoy and under hydrophone (each
# built from its Go module), on a kind cluster; results must hold the verdicts.
test-runners:
	FAULTLINE_RUNNERS_TEST=1 go test ./test/runners -count=1 -v -timeout 40m

# faultline node-setup on a kind cluster made from a node image without the
# faultline-slow handler: the CRI suite goes from skipped to run, and after
# remove the node's runtime configuration is byte-identical to before.
test-node-setup:
	FAULTLINE_NODESETUP_TEST=1 go test ./test/nodesetup -count=1 -v -timeout 40m

clean:
	rm -rf _output _artifacts

# Fuzz every parser of outside input for FUZZTIME each, one after the other
# (the seed corpora, and crashers kept in testdata/fuzz, run in `make test`).
FUZZTIME ?= 30s
FUZZ_TARGETS = \
	./fakes/dra/faultspec:FuzzParse \
	./fakes/dra/driver:FuzzFailQuery \
	./fakes/nri/faults:FuzzParse \
	./fakes/nri/faults:FuzzFor \
	./fakes/nri/record:FuzzReload \
	./fakes/runcslow/ociruntime:FuzzSpecFromAnnotations \
	./fakes/runcslow/ociruntime:FuzzParseArgs \
	./fakes/runcslow/ociruntime:FuzzParseLog \
	./fakes/lib/query:FuzzParse \
	./fakes/lib/textcap:FuzzCut \
	./nodesetup:FuzzContainerdPlan \
	./nodesetup:FuzzCRIOPlan \
	./nodesetup:FuzzParseReport \
	./judge/verdicts:FuzzParseExpectations
.PHONY: fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "== $$fn in $$pkg for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done
