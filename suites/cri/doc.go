// Package cri holds the CRI suite (label Suite:cri): what the runtime does
// when the kubelet's RunPodSandbox or CreateContainer request times out. It
// is linked into the one test binary (suites/suites_test.go).
//
// The suite owns the fixture set "cri" (fixtures/cri: the CRI relay
// DaemonSet in faultline-cri and the faultline-slow RuntimeClass; suite.go).
// On a runtime whose CreateContainer runs no OCI create (containerd,
// vocab/runtimes CreateContainerRunsOCICreate), the CreateContainer specs
// also need the NRI suite's fixture set "nri", the one deployment both
// suites share (slowdown.go).
//
// Every spec names the requirement it checks with harness.Checks (label
// Req:<ID>, judge/requirements/catalogue.yaml); the report gives one verdict per
// requirement and stack.
//
//	cache.go     over direct CRI, once per stage (requirementsOf):
//	             CRI-SANDBOX-* and CRI-CONTAINER-*, each of RETRY-GETS-FIRST,
//	             RETRY-IN-PROGRESS, UNCLAIMED-HIDDEN, CHANGED-REQUEST,
//	             UNCLAIMED-REMOVED, RESTART-NO-LEAK
//	kubelet.go   through the kubelet: CRI-KUBELET-SLOW-CREATION-RUNS
//	target.go    the object a spec creates, and its witnesses
//	slowdown.go  how a creation is made slower than its caller's deadline
//	             (the annotations come from the fakes' packages:
//	             ociruntime.SlowCreate, the fake NRI plugin's client)
//	scope.go     the fixtures open no door: the API server refuses a pod of
//	             the faultline-slow RuntimeClass outside faultline's own
//	             namespaces
//	node.go      the relay connection (a port-forward to the relay, which
//	             listens on loopback only), runtime restarts (the relay
//	             signals the process serving the CRI socket, and the spec
//	             checks a new one serves it), the NRI record
package cri
