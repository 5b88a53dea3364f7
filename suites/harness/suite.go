package harness

// What makes the suites one test binary: the Suite:<name> label of every
// spec, and the one suite setup and teardown Ginkgo allows per binary.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fakes/lib/control"
	"github.com/faultline-k8s/faultline/vocab/suitenames"
)

// SuiteLabel is the label every spec of suite carries ("Suite:dra"): a run
// picks suites with --ginkgo.label-filter 'Suite:dra || Suite:nri'. The
// names and the label live in vocab/suitenames, which the CLI shares.
func SuiteLabel(suite string) string { return suitenames.Label(suite) }

// Describe registers a top-level container of suite, as framework.Describe
// does, with the suite's label; before each of its specs, require (if not
// nil) deploys what they need (Require). Every top-level container of a
// suite goes through Describe, so that every spec has exactly one
// Suite:<name> label (suites/labels_test.go checks it).
func Describe(suite string, require func(ctx context.Context), args ...any) bool {
	ginkgo.GinkgoHelper()
	args = append([]any{framework.WithLabel(SuiteLabel(suite))}, args...)
	if require != nil {
		for i := len(args) - 1; i >= 0; i-- {
			if body, ok := args[i].(func()); ok {
				args[i] = func() {
					ginkgo.BeforeEach(require)
					body()
				}
				break
			}
		}
	}
	return framework.Describe(args...)
}

// The one suite setup of the binary. Process 1 makes the run's control
// token, reads the cluster's facts and removes fixture sets an earlier run
// left behind (they answer another token); every process gets the facts
// and the token. The fixture sets themselves are deployed by the first spec
// that needs them (Require).
var _ = ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
	token, err := control.NewToken()
	framework.ExpectNoError(err)
	setControlToken(token)
	cs, err := framework.LoadClientset()
	framework.ExpectNoError(err, "client for the cluster")
	in, err := readClusterFacts(ctx, cs)
	if err != nil && Flags.Runtime != "" {
		framework.Logf("%v; going on with --faultline.runtime=%s", err, Flags.Runtime)
		in, err = clusterFacts{Source: "no facts"}, nil
	}
	framework.ExpectNoError(err, "the cluster's facts")
	framework.ExpectNoError(setCluster(in, true))
	recordStack(ctx, cs, in)
	framework.ExpectNoError(fixtureSets.removeDeployed(ctx, "left behind by an earlier run"), "remove leftover fixture sets")
	return encodeSetup(encodeClusterFacts(in), token)
}, func(ctx context.Context, raw []byte) {
	facts, token, err := decodeSetup(raw)
	framework.ExpectNoError(err, "the suite setup's data from process 1")
	setControlToken(token)
	framework.ExpectNoError(setCluster(decodeClusterFacts(facts), false))
})

// setupData is what process 1 hands the other Ginkgo processes, through
// Ginkgo's own channel between them (never a report or a log).
type setupData struct {
	Facts json.RawMessage `json:"facts"`
	Token string          `json:"token"` // control.Token.Secret
}

func encodeSetup(facts []byte, token control.Token) []byte {
	raw, err := json.Marshal(setupData{Facts: facts, Token: token.Secret()})
	framework.ExpectNoError(err, "encode the suite setup's data")
	return raw
}

// decodeSetup's errors never show the data: it holds the token.
func decodeSetup(raw []byte) (facts []byte, token control.Token, err error) {
	var d setupData
	if json.Unmarshal(raw, &d) != nil {
		return nil, control.Token{}, errors.New("not JSON")
	}
	if token, err = control.ParseToken(d.Token); err != nil {
		return nil, control.Token{}, err
	}
	return d.Facts, token, nil
}

// The one suite teardown: after every process is done, process 1 removes
// every fixture set a process deployed (every set whose namespace exists).
var _ = ginkgo.SynchronizedAfterSuite(func(context.Context) { closeFakePods() }, func(ctx context.Context) {
	if cluster == nil {
		// The suite setup failed before it knew the cluster: no spec ran,
		// nothing was deployed.
		return
	}
	framework.ExpectNoError(fixtureSets.removeDeployed(ctx, "deployed by this run"), "remove the fixture sets")
})
