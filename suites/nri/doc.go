// Package nri holds the NRI suite: how the runtime handles NRI plugins that
// fail, stall or crash in each hook.
//
// The suite deploys the fake NRI plugin (fixtures/nri, namespace
// faultline-nri-plugins) once, in SynchronizedBeforeSuite: instances
// faultline-a, -b, -c at indexes 10, 20, 30, and a runtime-state container
// that lists the runtime's sandboxes and containers of a pod over CRI. A
// spec puts fault annotations (nri.faultline.k8s.io/<instance>.<Event>) on
// its own pod, reads what each instance recorded about that pod through the
// pod proxy, and counts what the runtime holds for it, so specs run in
// parallel. Specs that make the runtime drop an instance (stall, crash,
// disconnect) are Serial and wait for it to be registered again.
//
// The specs, by requirement:
//
//  1. sync_hooks_test.go: an error in RunPodSandbox, CreateContainer or
//     UpdateContainer fails that CRI request with the plugin's message,
//     succeeds once the fault clears, and leaves nothing behind.
//  2. chain_test.go: an error stops the chain; lower indexes saw the
//     attempt in index order, higher ones never see it.
//  3. async_hooks_test.go: errors in post and asynchronous hooks do not
//     fail the pod, which starts and deletes completely.
//  4. and 5. fatal_test.go: a plugin that stalls past the request timeout,
//     crashes or drops its connection is dropped, the pod starts, the
//     plugin comes back and sees later events (Serial).
//  6. differences_test.go: StartContainer and StopPodSandbox, where runtimes
//     differ; a departure from the NRI design fails with "known
//     discrepancy <runtime>: ..." (see knownDiscrepancies).
//  7. validator_test.go: a missing required plugin fails container creation
//     (Feature:NRIDefaultValidator).
//  8. failure_policy_test.go: containerd/nri#45, pending.
//
// --faultline.nri-request-timeout must match the cluster's NRI request
// timeout (hack/run-e2e.sh --nri-request-timeout, default 2s).
package nri
