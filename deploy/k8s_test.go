package deploy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// object is one Kubernetes object with the file it came from.
type object struct {
	file string
	doc  map[string]any
}

func (o object) kind() string { return str(o.doc, "kind") }
func (o object) name() string { return str(o.doc, "metadata", "name") }

func loadK8s(t *testing.T) []object {
	t.Helper()
	kust := loadYAMLDocs(t, filepath.Join("k8s", "kustomization.yaml"))[0]
	files, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, r := range list(kust, "resources") {
		listed = append(listed, filepath.Join("k8s", r.(string)))
	}
	var objs []object
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		if !slices.Contains(listed, f) {
			t.Errorf("%s is not listed in kustomization.yaml", f)
		}
		for _, d := range loadYAMLDocs(t, f) {
			o := object{f, d}
			if str(d, "apiVersion") == "" || o.kind() == "" || o.name() == "" {
				t.Errorf("%s: object without apiVersion, kind or name", f)
			}
			objs = append(objs, o)
		}
	}
	for _, l := range listed {
		if _, err := os.Stat(l); err != nil {
			t.Errorf("kustomization lists %s: %v", l, err)
		}
	}
	return objs
}

func find(objs []object, kind, name string) (object, bool) {
	for _, o := range objs {
		if o.kind() == kind && o.name() == name {
			return o, true
		}
	}
	return object{}, false
}

func TestKubernetesWorkloads(t *testing.T) {
	objs := loadK8s(t)
	want := []struct {
		kind, name string
		replicas   string
		pvc        bool // a volumeClaimTemplate mounted on /data
	}{
		{"StatefulSet", "nats", "3", true},
		{"StatefulSet", "analyzer", "1", true},
		{"Deployment", "harness-worker", "", false},
		{"Deployment", "producer", "", false},
	}
	for _, w := range want {
		o, ok := find(objs, w.kind, w.name)
		if !ok {
			t.Errorf("no %s %s", w.kind, w.name)
			continue
		}
		if w.replicas != "" && str(o.doc, "spec", "replicas") != w.replicas {
			t.Errorf("%s %s: replicas %s, want %s", w.kind, w.name, str(o.doc, "spec", "replicas"), w.replicas)
		}
		pod := get(o.doc, "spec", "template")
		// Selector matches the pod template.
		for k, v := range get(o.doc, "spec", "selector", "matchLabels").(map[string]any) {
			if str(pod, "metadata", "labels", k) != v {
				t.Errorf("%s %s: selector %s=%v does not match the pod labels", w.kind, w.name, k, v)
			}
		}
		// Prometheus scrapes a port that a container exposes.
		ann := get(pod, "metadata", "annotations")
		if str(ann, "prometheus.io/scrape") != "true" || str(ann, "prometheus.io/path") != "/metrics" {
			t.Errorf("%s %s: no Prometheus scrape annotations", w.kind, w.name)
		}
		var ports []string
		for _, c := range list(pod, "spec", "containers") {
			for _, p := range list(c, "ports") {
				ports = append(ports, str(p, "containerPort"))
			}
		}
		if !slices.Contains(ports, str(ann, "prometheus.io/port")) {
			t.Errorf("%s %s: scrape port %s not among container ports %v", w.kind, w.name, str(ann, "prometheus.io/port"), ports)
		}
		// The main container: probes on /healthz, R3 streams for ditto processes.
		main := get(pod, "spec", "containers", "0")
		for _, probe := range []string{"livenessProbe", "readinessProbe"} {
			if path := str(main, probe, "httpGet", "path"); !strings.HasPrefix(path, "/healthz") && !(probe == "readinessProbe" && path == "/readyz") {
				t.Errorf("%s %s: %s path %q, want /healthz", w.kind, w.name, probe, path)
			}
			port := str(main, probe, "httpGet", "port")
			found := false
			for _, p := range list(main, "ports") {
				found = found || str(p, "name") == port || str(p, "containerPort") == port
			}
			if !found {
				t.Errorf("%s %s: %s port %q is not a container port", w.kind, w.name, probe, port)
			}
		}
		if w.name != "nats" {
			env := map[string]string{}
			for _, e := range list(main, "env") {
				env[str(e, "name")] = str(e, "value")
			}
			if env["DITTO_REPLICAS"] != "3" {
				t.Errorf("%s %s: DITTO_REPLICAS %q, want 3", w.kind, w.name, env["DITTO_REPLICAS"])
			}
			if n := len(strings.Split(env["DITTO_NATS_URL"], ",")); n != 3 {
				t.Errorf("%s %s: DITTO_NATS_URL names %d servers, want 3", w.kind, w.name, n)
			}
		}
		if w.pvc {
			claims := list(o.doc, "spec", "volumeClaimTemplates")
			if len(claims) != 1 || str(claims[0], "spec", "resources", "requests", "storage") == "" {
				t.Errorf("%s %s: want one volumeClaimTemplate with a storage request", w.kind, w.name)
				continue
			}
			claim := str(claims[0], "metadata", "name")
			mounted := false
			for _, m := range list(main, "volumeMounts") {
				mounted = mounted || str(m, "name") == claim && str(m, "mountPath") == "/data"
			}
			if !mounted {
				t.Errorf("%s %s: claim %q not mounted on /data", w.kind, w.name, claim)
			}
			if str(pod, "spec", "securityContext", "fsGroup") != "65532" {
				t.Errorf("%s %s: fsGroup 65532 needed to write the volume as the nonroot user", w.kind, w.name)
			}
		}
	}
}

func TestKubernetesServices(t *testing.T) {
	objs := loadK8s(t)
	for _, svc := range objs {
		if svc.kind() != "Service" {
			continue
		}
		sel := get(svc.doc, "spec", "selector").(map[string]any)
		matched := false
		for _, w := range objs {
			if w.kind() != "Deployment" && w.kind() != "StatefulSet" {
				continue
			}
			labels := get(w.doc, "spec", "template", "metadata", "labels")
			ok := true
			for k, v := range sel {
				ok = ok && str(labels, k) == v
			}
			matched = matched || ok
		}
		if !matched {
			t.Errorf("Service %s selects no workload", svc.name())
		}
	}
	nats, _ := find(objs, "StatefulSet", "nats")
	if got := str(nats.doc, "spec", "serviceName"); got != "nats-headless" {
		t.Errorf("nats serviceName %q", got)
	}
	headless, ok := find(objs, "Service", "nats-headless")
	if !ok || str(headless.doc, "spec", "clusterIP") != "None" {
		t.Error("no headless Service nats-headless (stable route names)")
	}
}
