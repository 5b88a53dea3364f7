package conformance

import (
	"reflect"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/faultline-k8s/faultline/fixtures/access"
	"github.com/faultline-k8s/faultline/internal/ginkgorun"
	"github.com/faultline-k8s/faultline/internal/imageref"
)

// TestManifestsNameThisBuildsImage: the Job and the sonobuoy plugin run
// this build's conformance image from the registry given, and parse as
// what they claim to be.
func TestManifestsNameThisBuildsImage(t *testing.T) {
	want := imageref.Conformance("registry.example/ci")
	for _, name := range []string{"job", "sonobuoy-plugin"} {
		out, err := Manifest(name, "registry.example/ci", "IfNotPresent")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(string(out), "image: "+want+"\n") {
			t.Errorf("%s does not run %s:\n%s", name, want, out)
		}
	}
	job, _ := Manifest("job", "", "IfNotPresent")
	docs := strings.Split(string(job), "\n---\n")
	var j batchv1.Job
	if err := yaml.Unmarshal([]byte(docs[len(docs)-1]), &j); err != nil || j.Kind != "Job" {
		t.Fatalf("the job manifest's last document is not a Job: %v", err)
	}
	if got := j.Spec.Template.Spec.NodeSelector["kubernetes.io/os"]; got != "linux" {
		t.Errorf("the Job's pod selects os %q", got)
	}
	plugin, _ := Manifest("sonobuoy-plugin", "", "IfNotPresent")
	var def struct {
		Config struct {
			Driver       string   `json:"driver"`
			Name         string   `json:"plugin-name"`
			ResultFormat string   `json:"result-format"`
			ResultFiles  []string `json:"result-files"`
		} `json:"sonobuoy-config"`
	}
	if err := sigsyaml.Unmarshal(plugin, &def); err != nil {
		t.Fatal(err)
	}
	if def.Config.Driver != "Job" || def.Config.ResultFormat != "junit" || def.Config.Name != "faultline" || len(def.Config.ResultFiles) != 1 || def.Config.ResultFiles[0] != ginkgorun.JUnitFile {
		t.Errorf("sonobuoy-config %+v", def.Config)
	}
	cfg, err := Manifest("sonobuoy-config", "", "IfNotPresent")
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Server struct {
			Advertise string `json:"advertiseaddress"`
		}
	}
	if err := sigsyaml.Unmarshal(cfg, &sc); err != nil || sc.Server.Advertise == "" {
		t.Errorf("the sonobuoy config advertises no aggregator address: %v %s", err, cfg)
	}
	if _, err := Manifest("job", "", "sometimes"); err == nil {
		t.Error("a bad pull policy must be refused")
	}
	if _, err := Manifest("helm", "", "Always"); err == nil {
		t.Error("an unknown manifest must be refused")
	}
}

// TestJobRBAC: the Job's service account is bound to a ClusterRole of its
// own, not cluster-admin, whose rules are what the suites and the fixture
// sets need (access.JobRules) and let the runner remove the role and the
// binding, which the Job names to it (RemoveRBACEnv).
func TestJobRBAC(t *testing.T) {
	out, err := Manifest("job", "", "IfNotPresent")
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	var job *batchv1.Job
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var meta struct{ Kind string }
		if err := sigsyaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		var into any
		switch meta.Kind {
		case "ClusterRole":
			role = &rbacv1.ClusterRole{}
			into = role
		case "ClusterRoleBinding":
			binding = &rbacv1.ClusterRoleBinding{}
			into = binding
		case "Job":
			job = &batchv1.Job{}
			into = job
		default:
			continue
		}
		if err := sigsyaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Fatalf("%s: %v", meta.Kind, err)
		}
	}
	if role == nil || binding == nil || job == nil {
		t.Fatalf("want a ClusterRole, a ClusterRoleBinding and a Job:\n%s", out)
	}
	want, err := access.JobRules()
	if err != nil {
		t.Fatal(err)
	}
	if role.Name != access.Job || !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("ClusterRole %s does not hold access.JobRules", role.Name)
	}
	if binding.Name != access.Job || binding.RoleRef.Kind != "ClusterRole" || binding.RoleRef.Name != role.Name ||
		len(binding.Subjects) != 1 || binding.Subjects[0].Name != job.Spec.Template.Spec.ServiceAccountName || binding.Subjects[0].Namespace != job.Namespace {
		t.Errorf("the binding %s binds %+v to %+v, want the Job's service account to %s", binding.Name, binding.RoleRef, binding.Subjects, role.Name)
	}
	var remove string
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		if e.Name == RemoveRBACEnv {
			remove = e.Value
		}
	}
	if remove != role.Name || remove != binding.Name {
		t.Errorf("the Job's %s is %q, want %s: the runner removes the role and binding it names", RemoveRBACEnv, remove, role.Name)
	}
	for _, a := range access.JobSelfRemoval {
		if a.Name != remove {
			t.Errorf("the runner's self-removal asks %s, not of the Job's role %s", a, remove)
		}
	}
	if strings.Contains(string(out), "cluster-admin\n") {
		t.Error("the Job manifest still names cluster-admin")
	}
}
