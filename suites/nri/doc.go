// Package nri holds the NRI suite (label Suite:nri): how the runtime handles
// NRI plugins that fail, stall or crash in each hook. It is linked into the
// one test binary (suites/suites_test.go).
//
// The suite owns the fixture set "nri" (fixtures/nri, namespace
// faultline-nri-plugins; suite.go): the fake NRI plugin's instances
// faultline-a, -p, -b, -k, -c at indexes 10, 15, 20, 25, 30 (p declares
// the failure policy fail_request and keep_connected, k keep_connected
// alone, the others none), and a runtime-state container
// that lists the runtime's sandboxes and containers of a pod over CRI. The
// first spec that needs it deploys it (harness.Require, through describe);
// before every spec the harness checks that each instance answers its
// /healthz, i.e. is registered with the runtime. The CRI suite shares the
// same deployment on containerd (it stalls instance a's CreateContainer for
// its own pods, in Serial specs that wait for instance a to be registered
// again), so a node never runs two plugins at one index.
//
// A spec puts fault annotations (nri.faultline.k8s.io/<instance>.<Event>,
// built from typed values by the plugin's client, fakes/nri/nriclient,
// next to the plugin's parser) on its own pod, reads what each instance
// recorded about that pod through a port-forward (the plugin listens on
// loopback only; the same client), and
// counts what the runtime holds for it, so specs run in parallel, also with
// other suites' specs. Specs that make the runtime drop
// an instance (stall, crash, disconnect) are Serial and wait for it to be
// registered again.
//
// Every spec names the requirement it checks with harness.Checks (label
// Req:<ID>, judge/requirements/catalogue.yaml); the report gives one verdict per
// requirement and stack.
//
// The specs, by requirement:
//
//	sync_hooks.go      NRI-SYNC-ERROR-FAILS-REQUEST: an error in RunPodSandbox,
//	                   CreateContainer or UpdateContainer fails that CRI request
//	                   with the plugin's message, succeeds once the fault
//	                   clears, and leaves nothing behind.
//	chain.go           NRI-ERROR-STOPS-CHAIN: an error stops the chain; lower
//	                   indexes saw the attempt in index order, higher ones
//	                   never see it.
//	async_hooks.go     NRI-ASYNC-ERROR-IGNORED: errors in post and asynchronous
//	                   hooks do not fail the pod, which starts and deletes
//	                   completely.
//	fatal.go           NRI-STALLED-PLUGIN-DROPPED, NRI-CRASHED-PLUGIN-DROPPED: a
//	                   plugin that stalls past the request timeout, crashes or
//	                   drops its connection is dropped, the pod starts, the
//	                   plugin comes back and sees later events (Serial).
//	differences.go     NRI-START-ERROR-FAILS-REQUEST,
//	                   NRI-STOP-SANDBOX-ERROR-FAILS-REQUEST: StartContainer and
//	                   StopPodSandbox, where runtimes differ; a departure from
//	                   the NRI design fails with "discrepancy <runtime>: ...",
//	                   cause request-succeeded (the stacks' expectations name
//	                   the departures known).
//	validator.go       NRI-REQUIRED-PLUGIN-MISSING, NRI-REQUIRED-PLUGINS-PRESENT:
//	                   a missing required plugin fails container creation
//	                   (Feature:NRIDefaultValidator).
//	failure_policy.go  NRI-POLICY-FAIL-REQUEST, NRI-POLICY-KEEP-CONNECTED,
//	                   NRI-POLICY-RETURNED-ERROR-FAILS: the per-plugin failure
//	                   policy of NRI v0.12.4. A plugin that declares
//	                   fail_request and stalls past the request timeout fails
//	                   the request, naming itself and the request, and the
//	                   plugins after it never see the attempt; one that declares
//	                   keep_connected stays registered and gets the next events
//	                   on the same connection; an error a plugin returns fails
//	                   the request whatever its policy. A runtime that behaves
//	                   as if no policy was declared gives "not implemented"
//	                   (failure where it is known to vendor NRI >= v0.12.4:
//	                   harness.Cluster().NRIVersion, policy_version.go). And
//	                   NRI-REQUIRED-PLUGIN-TIMEOUT (containerd/nri#316): a
//	                   required plugin that times out in CreateContainer must
//	                   not count as consulted (Feature:NRIDefaultValidator).
//	                   The specs that stall an instance are Serial.
//	scope.go           FAULTLINE-FAULTS-SCOPED: the fixtures open no door: the
//	                   API server refuses a pod with an NRI fault annotation
//	                   outside faultline's own namespaces.
//
// common.go, pods.go and node.go are the specs' helpers; plugins.go binds
// the plugin's client to the suite's deployment and dumps it on failure. The
// runtime's NRI timeouts the specs wait with are cluster facts
// (harness.Cluster: the cluster's ConfigMap, else
// --faultline.nri-request-timeout, else the default of vocab/facts).
package nri
