package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/clusters/kindcluster"
	"github.com/faultline-k8s/faultline/internal/artifactdir"
	"github.com/faultline-k8s/faultline/internal/cachelock"
	"github.com/faultline-k8s/faultline/internal/capacity"
	"github.com/faultline-k8s/faultline/internal/ginkgorun"
	"github.com/faultline-k8s/faultline/internal/interrupt"
	"github.com/faultline-k8s/faultline/internal/version"
	"github.com/faultline-k8s/faultline/judge/report"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// Time limits of the cleanup: an interrupted run must exit within 30 s;
// a finished one may take the time to collect logs.
const (
	interruptedCleanup = 18 * time.Second
	finishedCleanup    = 5 * time.Minute
	// ginkgoGrace is how long ginkgo gets after SIGINT to report and clean
	// up its specs' namespaces before its process group is killed.
	ginkgoGrace = 10 * time.Second
	// machineWindow is how long the run measures how idle the machine is
	// before it starts (capacity.Measure).
	machineWindow = 3 * time.Second
	// loadSampleEvery is how often the load average is read while the
	// clusters run, for the line the run prints about it.
	loadSampleEvery = 10 * time.Second
)

// errKept is what a cleanup step returns for what --keep keeps.
var errKept = errors.New("kept (--keep)")

// Run does a whole e2e run. work is cancelled by the first interrupt;
// cleanup by the second, which skips what is left of the cleanup. Options
// it refuses are OptionErrors, returned before anything runs.
func Run(work, cleanup context.Context, opts Options) error {
	opts, err := prepare(opts)
	if err != nil {
		return err
	}
	if opts.Machine.IsZero() && opts.weighsMachine() {
		// Before the engine and the clusters add faultline's own load: what
		// else runs on the machine (a shared CI runner's other jobs).
		m, err := capacity.Measure(work, machineWindow)
		if err != nil {
			if work.Err() != nil {
				return work.Err()
			}
			fmt.Fprintf(opts.Out, "faultline: how idle the machine is was not measured (%v)\n", err)
		}
		opts.Machine = m
	}
	return runWith(work, cleanup, opts, &realBackend{opts: opts, bin: filepath.Join(opts.RepoRoot, "_output", "bin")})
}

// runWith is Run with the parts that act on the machine behind b.
func runWith(work, cleanup context.Context, opts Options, b backend) error {
	dir, err := claimArtifacts(opts)
	if err != nil {
		return err
	}
	r := &run{opts: opts, dir: dir, stages: NewStages(opts.Out), b: b, stacks: make([]verdicts.ManifestStack, len(opts.Stacks()))}
	err = r.do(work)
	r.cleanup(work, cleanup)
	r.stages.WriteTable(opts.Out)
	if werr := r.stages.WriteFiles(opts.Artifacts); werr != nil {
		fmt.Fprintf(opts.Out, "faultline: write timings: %v\n", werr)
	}
	return err
}

type run struct {
	opts Options
	// dir is the artifacts directory: only what it records is removed.
	dir    *artifactdir.Dir
	stages *Stages
	b      backend

	mu       sync.Mutex
	cleanups []cleanupStep
	// stacks are the results each cluster wrote, in --runtime order (the
	// manifest, run.json, lists them).
	stacks []verdicts.ManifestStack
	// split says how each stack's selection was split between clusters,
	// for the report's header (verdicts.Header.Split); "" when it was not.
	split string
}

// splitHeader is Header.Split of a run that ran each stack's Serial specs on
// a second cluster.
const splitHeader = "Serial specs on a second cluster per stack"

// cleanupStep undoes one thing the run made; steps run last-made first.
type cleanupStep struct {
	runtime, name string
	do            func(ctx context.Context) error
}

func (r *run) onCleanup(runtime, name string, do func(ctx context.Context) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, cleanupStep{runtime, name, do})
}

func (r *run) do(ctx context.Context) error {
	o := r.opts
	if o.Kubeconfig == "" {
		var eng engineHandle
		err := r.stages.Run("", "ensure container engine", func() error {
			var err error
			eng, err = r.b.EnsureEngine(ctx)
			return err
		})
		// Registered before the error check: an engine that started but
		// did not answer is stopped too.
		if eng != nil && eng.Started() {
			r.onCleanup("", "stop engine", func(ctx context.Context) error {
				if o.Keep {
					eng.Keep()
					return errKept
				}
				return eng.Stop(ctx)
			})
		}
		if err != nil {
			return err
		}
	}
	if err := r.stages.Run("", "build test binary", func() error { return r.b.BuildTestBinary(ctx) }); err != nil {
		return err
	}
	if o.Kubeconfig != "" {
		return r.existingCluster(ctx)
	}
	stacks := o.Stacks()
	shares, why, err := o.shares()
	if err != nil {
		return err
	}
	if why != "" {
		fmt.Fprintf(o.Out, "faultline: %s\n", why)
	}
	if len(shares) > 1 {
		r.split = splitHeader
	}
	if o.Procs == 0 {
		fmt.Fprintf(o.Out, "faultline: %d Ginkgo processes per cluster, for a machine of %s (%s sets another number)\n",
			o.Machine.Procs(), o.Machine, o.OptionName("Procs"))
	}
	nodeImages, fakesImage, err := r.buildImages(ctx, stacks)
	if err != nil {
		return err
	}
	fakesID := r.b.ImageID(ctx, fakesImage)
	for i, st := range stacks {
		r.stacks[i] = verdicts.ManifestStack{Runtime: st.Runtime.Name, Kubernetes: st.Kubernetes, Variant: st.Variant, NodeImage: nodeImages[st.Label], FakesImageID: fakesID}
		if o.NodeImage == "" {
			r.stacks[i].NRIVersion = r.b.RuntimeNRIVersion(ctx, st)
		}
	}

	// Each stack on its own cluster, side by side: the specs mostly wait
	// on kubelet and runtime timers, not on the CPU.
	errs := make([]error, len(stacks))
	load := capacity.SampleLoad(ctx, loadSampleEvery)
	var wg sync.WaitGroup
	for i, st := range stacks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.onKind(ctx, i, st, shares, nodeImages[st.Label], fakesImage)
		}()
	}
	wg.Wait()
	fmt.Fprintf(o.Out, "faultline: load average while the clusters ran: %s\n", load())
	for i, err := range errs {
		if err != nil {
			r.stacks[i].Errors = append(r.stacks[i].Errors, err.Error())
		}
	}
	return r.finish(ctx, joinStackErrors(stacks, errs))
}

// buildImages builds (or finds in the cache) each stack's node image and the
// fakes image. One run at a time builds into the shared cache: the lock is
// held from the first build to the last, so that a second run waits (and
// says for whom) rather than slipping in between two builds; the clusters
// and the suites do not need it.
func (r *run) buildImages(ctx context.Context, stacks []Stack) (map[string]string, string, error) {
	o := r.opts
	if o.CacheDir != "" && (o.NodeImage == "" || o.FakesImage == "") {
		var lock *cachelock.Lock
		if err := r.stages.Run("", "wait for the cache lock", func() (err error) {
			lock, err = cachelock.Acquire(ctx, o.CacheDir, o.Out)
			return err
		}); err != nil {
			return nil, "", err
		}
		defer lock.Release()
	}
	nodeImages := map[string]string{}
	if o.NodeImage != "" {
		nodeImages[stacks[0].Label] = o.NodeImage
	} else {
		if err := r.stages.Run("", "ensure build tools", func() error { return r.b.EnsureBuildTools(ctx, o.Runtimes) }); err != nil {
			return nil, "", err
		}
		// One after the other: each build uses both cores.
		for _, st := range stacks {
			if err := r.stages.Run(st.Label, "build node image", func() error {
				ref, err := r.b.BuildNodeImage(ctx, st)
				nodeImages[st.Label] = ref
				return err
			}); err != nil {
				return nil, "", err
			}
			_ = os.WriteFile(filepath.Join(o.Artifacts, nodeImageFile(st.Label)), []byte(nodeImages[st.Label]+"\n"), 0o644)
		}
	}
	fakesImage := o.FakesImage
	if fakesImage == "" {
		if err := r.stages.Run("", "build fakes image", func() error {
			ref, err := r.b.BuildFakesImage(ctx)
			fakesImage = ref
			return err
		}); err != nil {
			return nil, "", err
		}
	}
	_ = os.WriteFile(filepath.Join(o.Artifacts, fakesImageFile), []byte(fakesImage+"\n"), 0o644)
	return nodeImages, fakesImage, nil
}

// finish writes the report and returns the run's error: a run that could
// not finish (err) says so even when the report also has unexpected
// verdicts, so that its exit code is not the verdicts' one.
func (r *run) finish(ctx context.Context, err error) error {
	werr := r.writeReport(ctx)
	switch {
	case err == nil:
		return werr
	case werr != nil:
		return fmt.Errorf("%w (and the report: %v)", err, werr)
	}
	return err
}

// onKind runs the suites of one stack on kind clusters of its own: one per
// share of its selection (Options.shares), created and run side by side.
func (r *run) onKind(ctx context.Context, index int, st Stack, shares []share, nodeImage, fakesImage string) error {
	dir, err := r.dir.Mkdir(st.Label)
	if err != nil {
		return err
	}
	clusters := make([]stackCluster, len(shares))
	errs := make([]error, len(shares))
	var wg sync.WaitGroup
	for i, sh := range shares {
		clusters[i] = r.stackCluster(st, sh, dir)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.bringUp(ctx, index, st, clusters[i], nodeImage, fakesImage)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	failed, err := r.runSuites(ctx, index, st.Label, clusters, fakesImage, dir)
	if failed || err != nil {
		for _, c := range clusters {
			r.exportLogsBeforeCleanup(ctx, c.label, c.name, c.logs)
		}
	}
	return err
}

// stackCluster is one kind cluster of a stack and the share it runs.
type stackCluster struct {
	share share
	// label names it in the stage table and the suites' output: the
	// stack's label, "/serial" for the Serial specs' cluster.
	label, name, kubeconfig string
	// logs is where its nodes' logs go when something failed.
	logs string
}

func (r *run) stackCluster(st Stack, sh share, dir string) stackCluster {
	c := stackCluster{share: sh, label: st.Label, name: r.opts.clusterName(st),
		kubeconfig: filepath.Join(dir, "kubeconfig"), logs: filepath.Join(dir, "cluster-logs")}
	if sh.name != "" {
		c.label += "/" + sh.name
		c.name += "-" + sh.name
		c.kubeconfig += "-" + sh.name
		c.logs += "-" + sh.name
	}
	return c
}

// bringUp creates (or, with Keep, reuses) one cluster of a stack and loads
// the fakes image into it.
func (r *run) bringUp(ctx context.Context, index int, st Stack, c stackCluster, nodeImage, fakesImage string) error {
	o := r.opts
	label, name, kubeconfig := c.label, c.name, c.kubeconfig
	settings := kindcluster.Settings{
		Name: name, Runtime: st.Runtime, NodeImage: nodeImage,
		RuntimeRequestTimeout: o.RuntimeRequestTimeout, NRIRequestTimeout: o.NRIRequestTimeout, KubeletSyncFrequency: o.KubeletSyncFrequency,
		FeatureGates: o.FeatureGates, KubernetesVersion: st.Kubernetes, Workers: o.Workers, NRIVersion: r.stacks[index].NRIVersion, Variant: st.Variant,
		FakeModes: o.FakeModes, CgroupV1: kindcluster.HostIsCgroupV1(),
	}
	err := r.stages.Run(label, "create cluster", func() error {
		exists, err := r.b.ClusterExists(ctx, name)
		if err != nil {
			return err
		}
		if exists {
			switch {
			case o.ReplaceCluster:
				fmt.Fprintf(o.Out, "faultline [%s]: deleting the existing cluster %q (%s)\n", label, name, o.OptionName("ReplaceCluster"))
				if err := r.b.DeleteCluster(ctx, name); err != nil {
					return err
				}
			case o.Keep:
				if err := r.b.ReuseCluster(ctx, settings, kubeconfig); err != nil {
					return fmt.Errorf("%w\n(%s deletes it and creates a new one)", err, o.OptionName("ReplaceCluster"))
				}
				fmt.Fprintf(o.Out, "faultline [%s]: reusing cluster %q (%s; its facts match this run)\n", label, name, o.OptionName("Keep"))
				return nil
			default:
				return fmt.Errorf("a kind cluster named %q exists and this run did not create it: "+
					"reuse it with %s (if faultline made it with the same settings), delete it with %s, or choose another %s",
					name, o.OptionName("Keep"), o.OptionName("ReplaceCluster"), o.OptionName("ClusterName"))
			}
		}
		// From here the cluster is this run's, also if creating it fails
		// half-way or is interrupted.
		r.onCleanup(label, "delete cluster", func(cctx context.Context) error {
			if o.Keep {
				fmt.Fprintf(o.Out, "faultline [%s]: keeping cluster %q (%s); kubeconfig: %s\n", label, name, o.OptionName("Keep"), kubeconfig)
				return errKept
			}
			return r.b.DeleteCluster(cctx, name)
		})
		return r.b.CreateCluster(ctx, settings, kubeconfig)
	})
	if err != nil {
		return err
	}
	// Also into a reused cluster: the fakes image changes with the code.
	if err := r.stages.Run(label, "load fakes image", func() error { return r.b.LoadImage(ctx, name, fakesImage) }); err != nil {
		return err
	}
	// Only a cluster with workers has pod traffic across nodes to prove;
	// no suite needs it, so a broken pod network shows here, not as a verdict.
	if o.Workers > 0 {
		err := r.stages.Run(label, "check pod traffic across nodes", func() error { return r.b.CheckPodTraffic(ctx, name, fakesImage) })
		if err != nil {
			r.exportLogsBeforeCleanup(ctx, label, name, c.logs)
			return err
		}
	}
	return nil
}

// exportLogsBeforeCleanup keeps the nodes' logs of a cluster that failed a
// check or a spec; not after an interrupt, which wants everything gone fast.
func (r *run) exportLogsBeforeCleanup(ctx context.Context, label, name, dir string) {
	if context.Cause(ctx) != nil {
		return
	}
	// Runs before the cluster's deletion (cleanup is last-in first-out).
	r.onCleanup(label, "export cluster logs", func(cctx context.Context) error {
		return r.b.ExportLogs(cctx, name, dir)
	})
}

// runSuites runs the selection --repeat times on a stack's clusters, each
// run into a directory of its own (dir itself when there is one run), and
// lists each run's report in the manifest. With the selection split between
// clusters, each run's shares run at the same time, the first into the
// run's directory, the Serial specs into serial/ under it, and their reports
// join into the run's one (ginkgorun.Merge). failed says some spec failed: the verdicts judge
// whether that was expected.
func (r *run) runSuites(ctx context.Context, index int, label string, clusters []stackCluster, fakesImage, dir string) (failed bool, err error) {
	o := r.opts
	for i := 1; i <= o.Repeat; i++ {
		runDir, stage := dir, "suites"
		if o.Repeat > 1 {
			runDir, stage = filepath.Join(dir, fmt.Sprintf("run-%d", i)), fmt.Sprintf("suites, run %d of %d", i, o.Repeat)
			if err := os.MkdirAll(runDir, 0o755); err != nil {
				return failed, err
			}
		}
		shareFailed, err := r.runShares(ctx, label, clusters, fakesImage, runDir, stage)
		failed = failed || shareFailed
		if _, statErr := os.Stat(filepath.Join(runDir, wire.GinkgoReportFile)); statErr == nil {
			rel, relErr := filepath.Rel(o.Artifacts, filepath.Join(runDir, wire.GinkgoReportFile))
			if relErr != nil {
				return failed, relErr
			}
			r.mu.Lock()
			r.stacks[index].Runs = append(r.stacks[index].Runs, rel)
			r.mu.Unlock()
		}
		if err != nil {
			return failed, err
		}
	}
	return failed, nil
}

// runShares runs one run of the selection, each share on its cluster, side
// by side, and leaves the run's one report in runDir.
func (r *run) runShares(ctx context.Context, label string, clusters []stackCluster, fakesImage, runDir, stage string) (failed bool, err error) {
	if len(clusters) == 1 {
		c := clusters[0]
		err := r.stages.RunSuites(c.label, stage, func() error {
			return r.b.RunSuites(ctx, c.label, c.kubeconfig, fakesImage, r.opts.ginkgoRun(c.share, runDir, filepath.Join(runDir, "dumps")))
		})
		if errors.Is(err, ginkgorun.ErrSpecsFailed) {
			return true, nil
		}
		return false, err
	}
	errs := make([]error, len(clusters))
	dirs := make([]string, len(clusters))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range clusters {
		// The first share's results are where a run on one cluster puts
		// its own (e2e.log beside the run's reports); the others' in a
		// directory each, by name.
		dirs[i] = filepath.Join(runDir, c.share.name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = os.MkdirAll(dirs[i], 0o755); errs[i] != nil {
				return
			}
			// One dumps directory for the run: the report's dump entries
			// are relative to the merged report's directory.
			run := r.opts.ginkgoRun(c.share, dirs[i], filepath.Join(runDir, "dumps"))
			errs[i] = r.stages.RunSuites(c.label, stage+" ("+describeShare(c.share)+")", func() error {
				return r.b.RunSuites(ctx, c.label, c.kubeconfig, fakesImage, run)
			})
			if errors.Is(errs[i], ginkgorun.ErrSpecsFailed) {
				mu.Lock()
				failed = true
				mu.Unlock()
				errs[i] = nil
			}
		}()
	}
	wg.Wait()
	var parts []types.Report
	for _, d := range dirs {
		if rep, rerr := ginkgorun.ReadReport(d); rerr == nil {
			parts = append(parts, rep)
		}
	}
	// What the shares that finished reported is the run's report, also
	// when another share could not finish (its error says so).
	if len(parts) > 0 {
		merged, merr := ginkgorun.Merge(parts)
		if merr == nil {
			// The report of one run has the run's label filter, not the
			// first share's ("!Serial"): the report's header says it, and
			// it tells which pending specs the run selected.
			merged.SuiteConfig.LabelFilter = r.opts.labelFilter()
			merr = ginkgorun.WriteReports(runDir, merged)
		}
		if merr != nil {
			errs = append(errs, fmt.Errorf("on %s: joining the shares' reports: %w", label, merr))
		}
	}
	return failed, errors.Join(errs...)
}

func describeShare(s share) string {
	if s.name == serialShare.name {
		return "Serial specs"
	}
	return "all but Serial"
}

// existingCluster runs the suites on the cluster the user named; nothing is
// built or created, and nothing but the suites' own fixtures is touched.
func (r *run) existingCluster(ctx context.Context) error {
	o := r.opts
	var rt runtimes.Runtime
	if err := r.stages.Run("", "read cluster facts", func() error {
		f, source, err := r.b.ReadFacts(ctx, o.Kubeconfig)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "faultline: the cluster runs %s %s, Kubernetes %s (from %s)\n", f.Runtime, f.RuntimeVersion, f.KubernetesVersion, source)
		// The facts name the runtime as text: they live in the cluster.
		rt, err = runtimes.Lookup(f.Runtime)
		if err != nil {
			return err
		}
		if o.RuntimesGiven && o.Runtimes[0].Name != rt.Name {
			return fmt.Errorf("%s %s, but the cluster's nodes run %s", o.OptionName("Runtimes"), o.Runtimes[0].Name, rt.Name)
		}
		return nil
	}); err != nil {
		return err
	}
	// Known only now: the runtime comes from the cluster.
	dir, err := r.dir.Mkdir(rt.Name)
	if err != nil {
		return err
	}
	r.stacks = []verdicts.ManifestStack{{Runtime: rt.Name}}
	the := []stackCluster{{share: wholeSelection, label: rt.Name, kubeconfig: o.Kubeconfig}}
	_, err = r.runSuites(ctx, 0, rt.Name, the, o.FakesImage, dir)
	if err != nil {
		r.stacks[0].Errors = append(r.stacks[0].Errors, err.Error())
	}
	return r.finish(ctx, err)
}

// writeReport writes the manifest (run.json) and judges the runs that wrote
// a report: the grid on the terminal, report.md, report.json and
// report.html. It returns verdicts.ErrUnexpected when a verdict is not what
// the stack's expectations say, else verdicts.ErrIncomplete when a selected
// requirement was not checked and AllowIncomplete is not set.
func (r *run) writeReport(ctx context.Context) error {
	o := r.opts
	var stacks []verdicts.ManifestStack
	for _, s := range r.stacks {
		if len(s.Runs) > 0 || len(s.Errors) > 0 {
			stacks = append(stacks, s)
		}
	}
	if len(stacks) == 0 {
		r.stages.Skip("", "report", "no suite ran")
		return nil
	}
	var rep *verdicts.Report
	err := r.stages.Run("", "report", func() error {
		m := verdicts.Manifest{Stacks: stacks, Header: verdicts.Header{
			Faultline: version.String(), Date: time.Now().UTC(), Repeat: o.Repeat,
			OwnClusters: o.Kubeconfig == "", Expectations: o.Expectations, Split: r.split,
		}}
		if err := verdicts.WriteManifest(o.Artifacts, m); err != nil {
			return err
		}
		var err error
		rep, err = report.FromArtifacts(o.Artifacts, o.Expectations)
		if err != nil {
			return err
		}
		report.WriteGrid(o.Out, rep)
		fmt.Fprintf(o.Out, "faultline: report in %s (%s, %s, %s)\n", o.Artifacts, report.MarkdownFile, report.JSONFile, report.HTMLFile)
		return nil
	})
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	r.stages.Judge(r.stackJudgment(rep))
	r.screenshot(ctx)
	if err := rep.Err(o.AllowIncomplete); err != nil {
		return fmt.Errorf("%w\n  the whole story: %s", err, filepath.Join(o.Artifacts, report.MarkdownFile))
	}
	return nil
}

// stackJudgment says, for the label of a cluster that ran suites (a stack's
// label, "<label>/serial" for its Serial specs' cluster), whether the report
// judged its stack and why it fails it: its unexpected verdicts and its
// suite setup failures ("" when there are none). A stack's errors the run
// itself recorded (verdicts.StackErrorName: a cluster not made, a ginkgo
// that wrote no report) are the failures of their own stages, not of a
// sibling cluster's suites. On a cluster faultline did not make, the one
// stack is whatever the cluster says it is.
func (r *run) stackJudgment(rep *verdicts.Report) func(label string) (why string, judged bool) {
	index := map[string]int{}
	for i, st := range r.opts.Stacks() {
		index[st.Label] = i
	}
	return func(label string) (string, bool) {
		label, _, _ = strings.Cut(label, "/")
		i, ok := index[label]
		if len(r.stacks) == 1 {
			i, ok = 0, true
		}
		if !ok || i >= len(r.stacks) {
			return "", false
		}
		s := r.stacks[i]
		key := wire.StackKey(s.Runtime, s.Kubernetes, s.Variant)
		ours := func(k string) bool { return len(r.stacks) == 1 || k == key }
		judged := false
		for _, st := range rep.Stacks {
			judged = judged || ours(st.Key)
		}
		if !judged {
			return "", false
		}
		unexpected, setup := 0, 0
		for _, v := range rep.Verdicts {
			if ours(v.Stack) && v.Unexpected != "" {
				unexpected++
			}
		}
		for _, f := range rep.SetupFailures {
			if ours(f.Stack) && f.Name != verdicts.StackErrorName {
				setup++
			}
		}
		var why []string
		if unexpected > 0 {
			why = append(why, fmt.Sprintf("unexpected verdicts (%d)", unexpected))
		}
		if setup > 0 {
			why = append(why, fmt.Sprintf("suite setup failed (%d)", setup))
		}
		return strings.Join(why, ", "), true
	}
}

// screenshot takes a picture of report.html (report.png) when Chromium is
// there to take it; a run without it loses nothing else.
func (r *run) screenshot(ctx context.Context) {
	switch {
	case ctx.Err() != nil:
		r.stages.Skip("", "screenshot", "interrupted")
		return
	case !r.b.Screenshots():
		r.stages.Skip("", "screenshot", "not in tests")
		return
	case !report.HaveBrowser():
		r.stages.Skip("", "screenshot", "no Chromium (apt-get install chromium)")
		return
	}
	_ = r.stages.Run("", "screenshot", func() error {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return report.Screenshot(sctx, filepath.Join(r.opts.Artifacts, report.HTMLFile), filepath.Join(r.opts.Artifacts, report.PNGFile))
	})
}

// cleanup undoes what the run made, last-made first, within its time limit;
// a second interrupt skips the rest and says what is left.
func (r *run) cleanup(work, outer context.Context) {
	limit := finishedCleanup
	if _, interrupted := interrupt.Caught(work); interrupted {
		limit = interruptedCleanup
	}
	ctx, cancel := context.WithTimeoutCause(outer, limit, fmt.Errorf("cleanup took longer than %s", limit))
	defer cancel()
	r.mu.Lock()
	steps := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(steps) - 1; i >= 0; i-- {
		if ctx.Err() != nil {
			var left []string
			for j := i; j >= 0; j-- {
				left = append(left, steps[j].name+" ("+orDash(steps[j].runtime)+")")
				r.stages.Skip(steps[j].runtime, steps[j].name, "cleanup skipped")
			}
			fmt.Fprintf(r.opts.Out, "faultline: cleanup skipped (%v); left behind: %s\n", context.Cause(ctx), strings.Join(left, ", "))
			return
		}
		s := steps[i]
		_ = r.stages.Run(s.runtime, s.name, func() error { return s.do(ctx) })
	}
}

// The files a run writes beside the report and the runtimes' directories.
const fakesImageFile = "fakes-image.txt"

func nodeImageFile(label string) string { return "node-image-" + label + ".txt" }

// claimArtifacts makes the artifacts directory the run's before any stage
// runs. A directory faultline did not make is refused (artifactdir.ErrNotOurs:
// bad input); in its own, an earlier run's results go, but only the paths it
// recorded writing (files a user put there stay), so that only this run's
// results are there; and every path this run may write is recorded before
// it is written, so a run that dies half-way is cleaned up by the next.
func claimArtifacts(o Options) (*artifactdir.Dir, error) {
	d, err := artifactdir.Claim(o.Artifacts, o.OptionName("Artifacts"), "faultline e2e "+version.String())
	if err != nil {
		return nil, err
	}
	// Refused before anything is removed: a refused run changes nothing.
	if err := d.Check(runOutputs(o)...); err != nil {
		return nil, err
	}
	// A kubeconfig a kept run left in its results directory (--kubeconfig
	// _artifacts/containerd/kubeconfig) survives their removal.
	var kubeconfig []byte
	rel, relErr := filepath.Rel(d.Path(), o.Kubeconfig)
	inside := o.Kubeconfig != "" && relErr == nil && filepath.IsLocal(rel)
	if inside {
		if kubeconfig, err = os.ReadFile(o.Kubeconfig); err != nil {
			return nil, err
		}
	}
	left, err := d.Clean()
	for _, p := range left {
		fmt.Fprintf(o.Out, "faultline: left %s in %s: an earlier run wrote it, but it is now a symbolic link or outside the directory; not followed\n", p, d.Path())
	}
	if err != nil {
		return nil, fmt.Errorf("remove an earlier run's results: %w", err)
	}
	if _, err := os.Lstat(o.Kubeconfig); inside && os.IsNotExist(err) {
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if err := d.Reserve(top); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(o.Kubeconfig), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(o.Kubeconfig, kubeconfig, 0o600); err != nil {
			return nil, err
		}
	}
	return d, d.Reserve(runOutputs(o)...)
}

// runOutputs are the paths (relative to the artifacts directory) a run may
// write; the runtimes' directories hold their logs, dumps and kubeconfig.
func runOutputs(o Options) []string {
	out := append([]string{verdicts.ManifestFile, fakesImageFile, timingsText, timingsJSON}, report.Files...)
	// On a cluster faultline did not make, the runtime is read from it
	// (existingCluster reserves its directory then), unless the user named it.
	if o.Kubeconfig != "" && !o.RuntimesGiven {
		return out
	}
	for _, st := range o.Stacks() {
		out = append(out, st.Label)
		if o.Kubeconfig == "" {
			out = append(out, nodeImageFile(st.Label))
		}
	}
	return out
}

func joinStackErrors(stacks []Stack, errs []error) error {
	var failed []string
	var all []error
	for i, err := range errs {
		if err != nil {
			failed = append(failed, stacks[i].Label)
			all = append(all, err)
		}
	}
	if len(all) == 0 {
		return nil
	}
	return fmt.Errorf("failed on %s: %w", strings.Join(failed, ", "), errors.Join(all...))
}

func isInterrupt(err error) bool {
	var e *interrupt.Error
	return errors.As(err, &e) || errors.Is(err, context.Canceled)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// linePrefixer writes whole lines with a prefix: runtimes side by side
// print into one terminal.
type linePrefixer struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// Flush writes a last unterminated line.
func (p *linePrefixer) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf)
		p.buf = nil
	}
}
