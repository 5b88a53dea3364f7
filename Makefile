# The targets a Go user expects. hack/run-e2e.sh is the main job; these wrap it.
.PHONY: all build test vet fmt e2e e2e-smoke clean

all: build test

build:
	go build -o _output/bin/faultline ./cmd/faultline

test:
	go test ./...

vet:
	go vet ./...

fmt:
	gofmt -l -w $$(git ls-files '*.go')

e2e:
	hack/run-e2e.sh

e2e-smoke:
	hack/run-e2e.sh --label-filter smoke

clean:
	rm -rf _output _artifacts
	find suites -name '*.test' -delete
