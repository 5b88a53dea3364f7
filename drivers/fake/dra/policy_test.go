package dra_test

// The ValidatingAdmissionPolicies of fixtures/dra, checked without a cluster:
// the kube-apiserver's own validation of the objects (which compiles every
// expression the way creating them would), and the policies evaluated on
// admission requests by the apiserver library's CEL validator, the code
// that runs them in the kube-apiserver. Requests the policies must admit
// and refuse, and none may make an expression fail.

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	admissionregistrationinstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	admissionregistrationvalidation "k8s.io/kubernetes/pkg/apis/admissionregistration/validation"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/drivers/fake/dra/driver"
	"github.com/faultline-k8s/faultline/drivers/fake/scope"
	"github.com/faultline-k8s/faultline/fixtures"
)

const (
	policySlices = "faultline-fake-dra-resourceslices"
	policyClaims = "faultline-fake-dra-claims"
	setNamespace = "faultline-system"
	driverUser   = "system:serviceaccount:" + setNamespace + ":fake-dra-driver"
	nodeNameKey  = "authentication.kubernetes.io/node-name"
)

// policies renders the set and returns its policies and bindings by name.
func policies(t *testing.T, v fixtures.Values) (map[string]*admissionregistrationv1.ValidatingAdmissionPolicy, map[string]*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	ps := map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{}
	bs := map[string]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	for _, o := range render(t, v) {
		switch o := o.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			ps[o.Name] = o
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			bs[o.Name] = o
		}
	}
	return ps, bs
}

// The kube-apiserver would accept the objects: defaulted and converted the
// way it does, then its validation, which compiles every expression.
func TestPoliciesPassAPIServerValidation(t *testing.T) {
	scheme := runtime.NewScheme()
	admissionregistrationinstall.Install(scheme)
	ps, bs := policies(t, fixtures.Values{Image: "i", PullPolicy: "Never", Namespace: setNamespace})
	// The set's two, and fixtures/_shared's namespace-label policy.
	if len(ps) != 3 || len(bs) != 3 {
		t.Fatalf("want 3 policies and 3 bindings, got %d and %d", len(ps), len(bs))
	}
	for name, p := range ps {
		p = p.DeepCopy()
		scheme.Default(p)
		var internal admissionregistration.ValidatingAdmissionPolicy
		if err := scheme.Convert(p, &internal, nil); err != nil {
			t.Fatal(err)
		}
		if errs := admissionregistrationvalidation.ValidateValidatingAdmissionPolicy(&internal); len(errs) > 0 {
			t.Errorf("policy %s: %v", name, errs.ToAggregate())
		}
		b := bs[name]
		if b == nil || b.Spec.PolicyName != name || len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
			t.Errorf("policy %s: binding %+v", name, b)
			continue
		}
		b = b.DeepCopy()
		scheme.Default(b)
		var internalBinding admissionregistration.ValidatingAdmissionPolicyBinding
		if err := scheme.Convert(b, &internalBinding, nil); err != nil {
			t.Fatal(err)
		}
		if errs := admissionregistrationvalidation.ValidateValidatingAdmissionPolicyBinding(&internalBinding); len(errs) > 0 {
			t.Errorf("binding %s: %v", name, errs.ToAggregate())
		}
	}
}

// compile builds the validator of a policy from the apiserver library's
// parts, as its ValidatingAdmissionPolicy plugin does (variables, match
// conditions, validations, message expressions; no params).
func compile(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	t.Helper()
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	withAuthz := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	var vars []plugincel.NamedExpressionAccessor
	for _, v := range p.Spec.Variables {
		vars = append(vars, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(vars, withAuthz, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if len(p.Spec.MatchConditions) > 0 {
		var conds []plugincel.ExpressionAccessor
		for i := range p.Spec.MatchConditions {
			conds = append(conds, (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i]))
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(conds, withAuthz, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	validations := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	return validating.NewValidator(
		compiler.CompileCondition(validations, withAuthz, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(nil, withAuthz, environment.StoredExpressions),
		compiler.CompileCondition(messages, plugincel.OptionalVariableDeclarations{}, environment.StoredExpressions),
		p.Spec.FailurePolicy, nil)
}

type request struct {
	op          admission.Operation
	obj, old    runtime.Object // nil: none
	namespace   *corev1.Namespace
	user        user.Info
	gvr         schema.GroupVersionResource
	kind        string
	nsName, obn string
}

// evaluate runs the policy on one request: admitted, or refused with a
// message. An expression that fails is a test error (with failurePolicy
// Fail it would refuse, but with a useless message).
func evaluate(t *testing.T, v validating.Validator, r request) (bool, string) {
	t.Helper()
	gvk := r.gvr.GroupVersion().WithKind(r.kind)
	attrs := admission.NewAttributesRecord(r.obj, r.old, gvk, r.nsName, r.obn, r.gvr, "", r.op, nil, false, r.user)
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: r.obj, VersionedOldObject: r.old}
	res := v.Validate(context.Background(), r.gvr, va, nil, r.namespace, celconfig.RuntimeCELCostBudget, nil)
	for _, d := range res.Decisions {
		if d.Evaluation == validating.EvalError {
			t.Errorf("expression failed: %s", d.Message)
		}
		if d.Action == validating.ActionDeny {
			return false, d.Message
		}
	}
	return true, ""
}

var (
	slicesGVR    = resourceapi.SchemeGroupVersion.WithResource("resourceslices")
	claimsGVR    = resourceapi.SchemeGroupVersion.WithResource("resourceclaims")
	templatesGVR = resourceapi.SchemeGroupVersion.WithResource("resourceclaimtemplates")
)

func slice(driverName string, node *string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "slice"},
		Spec: resourceapi.ResourceSliceSpec{Driver: driverName, NodeName: node,
			Pool: resourceapi.ResourcePool{Name: "pool", ResourceSliceCount: 1}},
	}
	if node == nil {
		s.Spec.AllNodes = ptr.To(true)
	}
	return s
}

func driverOn(node string) user.Info {
	return &user.DefaultInfo{Name: driverUser, Groups: []string{"system:serviceaccounts"},
		Extra: map[string][]string{nodeNameKey: {node}}}
}

func TestResourceSlicePolicy(t *testing.T) {
	ps, _ := policies(t, fixtures.Values{Image: "i", PullPolicy: "Never", Namespace: setNamespace})
	p := ps[policySlices]
	if p == nil {
		t.Fatalf("no policy %s", policySlices)
	}
	v := compile(t, p)
	nodeA, nodeB := ptr.To("node-a"), ptr.To("node-b")
	for _, tc := range []struct {
		name     string
		op       admission.Operation
		obj, old *resourceapi.ResourceSlice
		user     user.Info
		admit    bool
	}{
		{"create own driver, own node", admission.Create, slice(driver.DefaultDriverName, nodeA), nil, driverOn("node-a"), true},
		{"create second driver, own node", admission.Create, slice(secondDriverName, nodeA), nil, driverOn("node-a"), true},
		{"create other node", admission.Create, slice(driver.DefaultDriverName, nodeB), nil, driverOn("node-a"), false},
		{"create other driver", admission.Create, slice("gpu.example.com", nodeA), nil, driverOn("node-a"), false},
		{"create for all nodes", admission.Create, slice(driver.DefaultDriverName, nil), nil, driverOn("node-a"), false},
		{"token without node", admission.Create, slice(driver.DefaultDriverName, nodeA), nil, &user.DefaultInfo{Name: driverUser}, false},
		{"token with two nodes", admission.Create, slice(driver.DefaultDriverName, nodeA), nil,
			&user.DefaultInfo{Name: driverUser, Extra: map[string][]string{nodeNameKey: {"node-a", "node-b"}}}, false},
		{"update own", admission.Update, slice(driver.DefaultDriverName, nodeA), slice(driver.DefaultDriverName, nodeA), driverOn("node-a"), true},
		{"update takes another node's slice", admission.Update, slice(driver.DefaultDriverName, nodeA), slice(driver.DefaultDriverName, nodeB), driverOn("node-a"), false},
		{"update moves own slice away", admission.Update, slice(driver.DefaultDriverName, nodeB), slice(driver.DefaultDriverName, nodeA), driverOn("node-a"), false},
		{"update takes another driver's slice", admission.Update, slice(driver.DefaultDriverName, nodeA), slice("gpu.example.com", nodeA), driverOn("node-a"), false},
		{"delete own", admission.Delete, nil, slice(secondDriverName, nodeA), driverOn("node-a"), true},
		{"delete other node", admission.Delete, nil, slice(driver.DefaultDriverName, nodeB), driverOn("node-a"), false},
		{"delete other driver", admission.Delete, nil, slice("gpu.example.com", nodeA), driverOn("node-a"), false},
		// Not the driver: none of this policy's business.
		{"kubelet", admission.Delete, nil, slice("gpu.example.com", nodeB), &user.DefaultInfo{Name: "system:node:node-b"}, true},
		{"same account name, other namespace", admission.Create, slice("gpu.example.com", nodeB), nil,
			&user.DefaultInfo{Name: "system:serviceaccount:other:fake-dra-driver", Extra: map[string][]string{nodeNameKey: {"node-a"}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request{op: tc.op, user: tc.user, gvr: slicesGVR, kind: "ResourceSlice", obn: "slice"}
			if tc.obj != nil {
				r.obj = tc.obj
			}
			if tc.old != nil {
				r.old = tc.old
			}
			admitted, msg := evaluate(t, v, r)
			if admitted != tc.admit {
				t.Errorf("admitted=%v, want %v (%s)", admitted, tc.admit, msg)
			}
			if !admitted && !strings.Contains(msg, "own node") {
				t.Errorf("message %q", msg)
			}
		})
	}
}

func claim(namespace string, requests []resourceapi.DeviceRequest, config ...resourceapi.DeviceClaimConfiguration) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "c"},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests, Config: config}},
	}
}

func exactly(class string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class}}
}

func firstAvailable(classes ...string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: "r"}
	for _, c := range classes {
		r.FirstAvailable = append(r.FirstAvailable, resourceapi.DeviceSubRequest{Name: "s-" + strings.ReplaceAll(c, ".", "-"), DeviceClassName: c})
	}
	return r
}

func opaque(driverName string) resourceapi.DeviceClaimConfiguration {
	return resourceapi.DeviceClaimConfiguration{DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
		Driver: driverName, Parameters: runtime.RawExtension{Raw: []byte(`{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec"}`)}}}}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestClaimPolicy(t *testing.T) {
	const customClass = "custom.example.com"
	ps, _ := policies(t, fixtures.Values{Image: "i", PullPolicy: "Never", Namespace: setNamespace, DeviceClass: customClass})
	p := ps[policyClaims]
	if p == nil {
		t.Fatalf("no policy %s", policyClaims)
	}
	v := compile(t, p)
	ours := namespace("spec-1", map[string]string{scope.NamespaceLabel: scope.NamespaceLabelValue})
	tenant := namespace("tenant", map[string]string{"team": "a"})
	unlabelled := namespace("bare", nil)
	otherValue := namespace("other-value", map[string]string{scope.NamespaceLabel: "yes"})
	someUser := &user.DefaultInfo{Name: "alice"}

	for _, tc := range []struct {
		name       string
		spec       *resourceapi.ResourceClaim
		ns         *corev1.Namespace
		faultlined bool // uses a faultline class or driver config
	}{
		{"first class", claim("", []resourceapi.DeviceRequest{exactly(customClass)}), nil, true},
		{"second class", claim("", []resourceapi.DeviceRequest{exactly(secondDeviceClass)}), nil, true},
		{"first class among subrequests", claim("", []resourceapi.DeviceRequest{firstAvailable("gpu.example.com", customClass)}), nil, true},
		{"config for the first driver", claim("", []resourceapi.DeviceRequest{exactly("gpu.example.com")}, opaque(driver.DefaultDriverName)), nil, true},
		{"config for the second driver", claim("", nil, opaque(secondDriverName)), nil, true},
		{"other class", claim("", []resourceapi.DeviceRequest{exactly("gpu.example.com"), firstAvailable("gpu.example.com")}), nil, false},
		{"other driver's config", claim("", []resourceapi.DeviceRequest{exactly("gpu.example.com")}, opaque("gpu.example.com")), nil, false},
		{"no devices", claim("", nil), nil, false},
		{"request without class", claim("", []resourceapi.DeviceRequest{{Name: "r"}}), nil, false},
		{"config without opaque", claim("", nil, resourceapi.DeviceClaimConfiguration{Requests: []string{"r"}}), nil, false},
	} {
		for _, ns := range []*corev1.Namespace{ours, tenant, unlabelled, otherValue} {
			wantAdmit := !tc.faultlined || ns == ours
			c := tc.spec.DeepCopy()
			c.Namespace = ns.Name
			tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: c.ObjectMeta, Spec: resourceapi.ResourceClaimTemplateSpec{Spec: c.Spec}}
			for _, r := range []request{
				{op: admission.Create, obj: c, gvr: claimsGVR, kind: "ResourceClaim"},
				{op: admission.Create, obj: tmpl, gvr: templatesGVR, kind: "ResourceClaimTemplate"},
			} {
				r.namespace, r.user, r.nsName, r.obn = ns, someUser, ns.Name, c.Name
				admitted, msg := evaluate(t, v, r)
				if admitted != wantAdmit {
					t.Errorf("%s: %s in %s: admitted=%v, want %v (%s)", tc.name, r.kind, ns.Name, admitted, wantAdmit, msg)
				}
				if !admitted && (!strings.Contains(msg, scope.NamespaceLabel+"="+scope.NamespaceLabelValue) || !strings.Contains(msg, customClass)) {
					t.Errorf("%s: message %q", tc.name, msg)
				}
			}
		}
	}

	// An update that leaves the spec alone (finalizers, labels) goes
	// through, so that a claim older than the policy can still go; one
	// that changes it is checked.
	old := claim(tenant.Name, []resourceapi.DeviceRequest{exactly(customClass)})
	meta := old.DeepCopy()
	meta.Finalizers = nil
	meta.Labels = map[string]string{"x": "y"}
	changed := old.DeepCopy()
	changed.Spec.Devices.Requests = append(changed.Spec.Devices.Requests, exactly(secondDeviceClass))
	for _, tc := range []struct {
		name  string
		obj   *resourceapi.ResourceClaim
		admit bool
	}{{"metadata only", meta, true}, {"spec changed", changed, false}} {
		admitted, msg := evaluate(t, v, request{op: admission.Update, obj: tc.obj, old: old, namespace: tenant, user: someUser,
			gvr: claimsGVR, kind: "ResourceClaim", nsName: tenant.Name, obn: old.Name})
		if admitted != tc.admit {
			t.Errorf("update %s: admitted=%v, want %v (%s)", tc.name, admitted, tc.admit, msg)
		}
	}

	// The default DeviceClass name, when the set is rendered without one.
	ps, _ = policies(t, fixtures.Values{Image: "i", PullPolicy: "Never", Namespace: setNamespace})
	v = compile(t, ps[policyClaims])
	if admitted, _ := evaluate(t, v, request{op: admission.Create, obj: claim(tenant.Name, []resourceapi.DeviceRequest{exactly("faultline.k8s.io")}),
		namespace: tenant, user: someUser, gvr: claimsGVR, kind: "ResourceClaim", nsName: tenant.Name, obn: "c"}); admitted {
		t.Error("the default DeviceClass faultline.k8s.io must be refused in a tenant namespace")
	}
}
