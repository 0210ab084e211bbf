package deploycheck

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// object is the part of a rendered object the RBAC check reads.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Rules []struct {
		APIGroups []string `json:"apiGroups"`
		Resources []string `json:"resources"`
		Verbs     []string `json:"verbs"`
	} `json:"rules"`
	RoleRef struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"roleRef"`
	Subjects []struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"subjects"`
	Spec struct {
		Template struct {
			Spec struct {
				ServiceAccountName string `json:"serviceAccountName"`
				Containers         []struct {
					Args []string `json:"args"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// renderedFiles: the committed plain manifests, plus the chart renderings `make deploy-check`
// passes in SMG_RENDERED (space-separated paths: every optional part on, all namespaces).
func renderedFiles() []string {
	return append([]string{"../../deploy/k8s/smg.yaml"}, strings.Fields(os.Getenv("SMG_RENDERED"))...)
}

// The discovery RBAC grants exactly get, list and watch on core pods, to the Deployment's
// ServiceAccount: a Role (in the watched namespace) when discovery watches one namespace, a
// ClusterRole when it watches all of them.
func TestRBACGrantsExactlyReadOnPods(t *testing.T) {
	for _, f := range renderedFiles() {
		t.Run(f, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var roles, bindings []object
			var dep *object
			for _, doc := range bytes.Split(b, []byte("\n---\n")) {
				var o object
				if err := yaml.Unmarshal(doc, &o); err != nil {
					t.Fatal(err)
				}
				switch o.Kind {
				case "Role", "ClusterRole":
					roles = append(roles, o)
				case "RoleBinding", "ClusterRoleBinding":
					bindings = append(bindings, o)
				case "Deployment":
					dep = &o
				}
			}
			if dep == nil || len(dep.Spec.Template.Spec.Containers) != 1 {
				t.Fatal("no Deployment with one container")
			}
			if len(roles) != 1 || len(bindings) != 1 {
				t.Fatalf("want one role and one binding, got %d and %d", len(roles), len(bindings))
			}
			role, bind := roles[0], bindings[0]
			wantKind, wantNS := "Role", ""
			args := dep.Spec.Template.Spec.Containers[0].Args
			if has(args, "--service-discovery") {
				wantKind = "ClusterRole"
				for _, a := range args {
					if ns, ok := strings.CutPrefix(a, "--service-discovery-namespace="); ok {
						wantKind, wantNS = "Role", ns
					}
				}
			}
			if role.Kind != wantKind {
				t.Fatalf("args %v: want a %s, got a %s", args, wantKind, role.Kind)
			}
			if wantNS != "" && role.Metadata.Namespace != wantNS && !(role.Metadata.Namespace == "" && wantNS == "smg") {
				t.Fatalf("the Role is in namespace %q, discovery watches %q", role.Metadata.Namespace, wantNS)
			}
			if bind.Kind != wantKind+"Binding" || bind.RoleRef.Kind != wantKind || bind.RoleRef.Name != role.Metadata.Name ||
				bind.Metadata.Namespace != role.Metadata.Namespace {
				t.Fatalf("binding %s %q (ns %q) refers to %s %q; want the %s %q (ns %q)", bind.Kind, bind.Metadata.Name,
					bind.Metadata.Namespace, bind.RoleRef.Kind, bind.RoleRef.Name, role.Kind, role.Metadata.Name, role.Metadata.Namespace)
			}
			if len(bind.Subjects) != 1 || bind.Subjects[0].Kind != "ServiceAccount" ||
				bind.Subjects[0].Name != dep.Spec.Template.Spec.ServiceAccountName {
				t.Fatalf("binding subjects %+v, want the Deployment's ServiceAccount %q", bind.Subjects, dep.Spec.Template.Spec.ServiceAccountName)
			}
			if len(role.Rules) != 1 {
				t.Fatalf("want one rule, got %+v", role.Rules)
			}
			r := role.Rules[0]
			if !reflect.DeepEqual(r.APIGroups, []string{""}) || !reflect.DeepEqual(r.Resources, []string{"pods"}) ||
				!reflect.DeepEqual(r.Verbs, []string{"get", "list", "watch"}) {
				t.Fatalf("rule %+v, want exactly get, list, watch on core pods", r)
			}
		})
	}
}

func has(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}
