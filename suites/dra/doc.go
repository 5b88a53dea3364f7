// Package dra holds the DRA suite (label Suite:dra): how the kubelet and a
// DRA driver handle permanent and transient NodePrepareResources /
// NodeUnprepareResources failures, organised by requirement. It is linked
// into the one test binary (suites/suites_test.go).
//
// The suite owns the fixture set "dra" (fixtures/dra, namespace
// faultline-dra-driver; suite.go): three instances of the fake driver
// (fakes/dra; their list is fakes/dra/instances, driver.go names them):
// dra.faultline.k8s.io, which most specs use; second.dra.faultline.k8s.io,
// for specs with two drivers and the health stream; and
// dra.third.faultline.k8s.io, unresponsive.go's own.
// The first spec that needs it deploys it (harness.Require, through
// describe) and waits until every driver is registered and has published
// its devices; the run removes it at the end. Every spec makes its own
// namespace, claims and FaultSpecs (typed by fakes/dra/faultspec),
// and reads the driver's call record (and, for cdi.go, the kubelet's
// PodResources for a pod) through a port-forward (the driver listens on
// loopback only); both through the driver's client,
// fakes/dra/draclient.
//
//	prepare.go    transient and unclassified failures are retried; a permanent
//	              one fails the pod (KEP-5322; a kubelet that retries it
//	              gets the verdict "not implemented", harness.NotImplemented); a bad
//	              configuration names its field and is not retried faster than
//	              the kubelet's resync; a stalled call is retried without a
//	              duplicate preparation; a timed-out call's error names driver
//	              and claim
//	unprepare.go  a failing unprepare is retried and the pod's deletion waits
//	              for it, also with two drivers
//	multi.go      several claims and two drivers, one failing: every failing
//	              device and claim is named, the healthy driver's claim is
//	              unprepared exactly once, also when the pod is
//	              deleted while the other driver keeps failing
//	cdi.go        a partly failed prepare, made deterministic: one driver,
//	              two claims, the first response leaves one out (an Omit
//	              fault); after the retry the kubelet's PodResources API
//	              (read by the driver on the node) lists each claim's CDI
//	              device once (kubernetes#140274), the pod runs, and the
//	              answered claim is prepared once; the runtime's
//	              injections are recorded beside it
//	device.go     a device failing while in use: NoExecute taint evicts, the
//	              replacement gets a healthy device (Serial); health in pod
//	              status
//	health.go     the driver's health stream drops: the device's health is
//	              Unknown in the pod status while it is down, Healthy again
//	              once the kubelet has reconnected (second driver: not Serial)
//	kubelet_restart.go
//	              the kubelet restarts (the CRI relay of fixture set "cri",
//	              POST /restart-kubelet) while a stalled prepare or unprepare
//	              is in progress (the driver's record: inProgress): the call
//	              is retried, the pod runs or its deletion completes, and the
//	              driver prepared / unprepared the claim once (Serial,
//	              Disruptive)
//	unresponsive.go
//	              a registered driver stops answering (an Unresponsive
//	              fault stops its DRA service, its registration stays): the
//	              kubelet removes its ResourceSlices after its wiping delay
//	              (the API server's witness), every error the pod is shown
//	              names the driver, and the pod runs once the driver
//	              answers again (the third driver, which no other spec
//	              uses: not Serial)
//	scope.go      the fixtures open no door: the API server refuses a claim
//	              of the fake driver's class with a FaultSpec outside
//	              faultline's own namespaces
//	timing.go     the kubelet timings the timeouts derive from, as measured
//
// Every spec names the requirement it checks with harness.Checks (label
// Req:<ID>, judge/requirements/catalogue.yaml); the report gives one verdict per
// requirement and stack.
//
// driver.go binds the driver's client to the suite's deployment; objects.go,
// wait.go and dump.go are the specs' helpers.
package dra
