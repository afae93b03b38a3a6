package deploy

import (
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/splitguard/splitguard/sweep"
)

// decodeAll splits a multi-document text and decodes each document
// strictly (an unknown or misplaced field is an error) into the
// Kubernetes API type of its kind.
func decodeAll(t *testing.T, text []byte) []any {
	t.Helper()
	var out []any
	for i, doc := range strings.Split(string(text), "\n---\n") {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
		var obj any
		switch head.APIVersion + " " + head.Kind {
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1 PersistentVolumeClaim":
			obj = &corev1.PersistentVolumeClaim{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "batch/v1 Job":
			obj = &batchv1.Job{}
		default:
			t.Fatalf("document %d: unexpected %s %s", i+1, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("document %d (%s): %v\n%s", i+1, head.Kind, err, doc)
		}
		out = append(out, obj)
	}
	return out
}

func TestStrictDecodingCatchesTypos(t *testing.T) {
	bad := "apiVersion: batch/v1\nkind: Job\nspec:\n  completion: 3\n"
	if err := yaml.UnmarshalStrict([]byte(bad), &batchv1.Job{}); err == nil {
		t.Fatal("a misspelt field decoded without error: the manifest test would prove nothing")
	}
}

func TestK8sSweep(t *testing.T) {
	spec := []byte("base: {synth_rows: 1000}\ngrid: [{protect: none}]\n")
	res := sweep.Resources{Shards: 3, Jobs: 2, CPUs: 4, MemoryMB: 3000, TimeMinutes: 90, StorageGB: 7}
	text, err := K8sSweepManifests(K8sSweep{Name: "splitguard-quick", Image: "reg.example/splitguard:v1", SpecText: spec, Resources: res, StorageClass: "nfs"})
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, text)
	if len(objs) != 3 {
		t.Fatalf("%d documents, want 3", len(objs))
	}
	cm, pvc, job := objs[0].(*corev1.ConfigMap), objs[1].(*corev1.PersistentVolumeClaim), objs[2].(*batchv1.Job)
	if cm.Data["sweep.yaml"] != string(spec) {
		t.Errorf("ConfigMap sweep.yaml = %q", cm.Data["sweep.yaml"])
	}
	if len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany {
		t.Errorf("access modes %v: every shard writes the sweep directory", pvc.Spec.AccessModes)
	}
	if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("7Gi")) != 0 {
		t.Errorf("storage %v", q.String())
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "nfs" {
		t.Errorf("storage class %v", pvc.Spec.StorageClassName)
	}
	js := job.Spec
	if js.CompletionMode == nil || *js.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completion mode %v", js.CompletionMode)
	}
	if *js.Completions != 3 || *js.Parallelism != 3 || *js.BackoffLimitPerIndex != 3 || *js.ActiveDeadlineSeconds != 90*60 {
		t.Errorf("completions %d parallelism %d backoff per index %d deadline %d", *js.Completions, *js.Parallelism, *js.BackoffLimitPerIndex, *js.ActiveDeadlineSeconds)
	}
	pod := js.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restart policy %s", pod.RestartPolicy)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot || *pod.SecurityContext.RunAsUser != K8sUID {
		t.Errorf("pod security %+v", pod.SecurityContext)
	}
	c := pod.Containers[0]
	if c.Image != "reg.example/splitguard:v1" || strings.Join(append(c.Command, c.Args...), " ") != "splitguard sweep "+K8sSpecPath+" --out "+K8sSweepDir+" --jobs 2" {
		t.Errorf("container %s %v %v", c.Image, c.Command, c.Args)
	}
	if q := c.Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("cpu %s", q.String())
	}
	if q := c.Resources.Limits[corev1.ResourceMemory]; q.Cmp(resource.MustParse("3000Mi")) != 0 {
		t.Errorf("memory %s", q.String())
	}
	// The volumes reach the objects above and the paths the args name.
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
		if _, ok := vols[m.Name]; !ok {
			t.Errorf("mount %s names no volume", m.Name)
		}
	}
	if v := vols[mounts[K8sSweepDir]]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pvc.Name {
		t.Errorf("%s is not the claim %s: %+v", K8sSweepDir, pvc.Name, v)
	}
	if v := vols[mounts["/etc/splitguard"]]; v.ConfigMap == nil || v.ConfigMap.Name != cm.Name {
		t.Errorf("/etc/splitguard is not the ConfigMap %s: %+v", cm.Name, v)
	}
	// Each index's pod gets its shard: Kubernetes sets
	// JOB_COMPLETION_INDEX, the manifest the count.
	for i := 0; i < 3; i++ {
		env := map[string]string{"JOB_COMPLETION_INDEX": fmt.Sprint(i)}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		s, src, err := sweep.ShardFromEnv(func(k string) string { return env[k] })
		if err != nil || s != (sweep.Shard{Index: i, Count: 3}) || src != "JOB_COMPLETION_INDEX" {
			t.Errorf("index %d: shard %v from %q, %v", i, s, src, err)
		}
	}
}

func TestK8sTraining(t *testing.T) {
	text, err := K8sTrainingManifests(K8sTraining{Name: "criteo", Image: "img:1",
		ActiveConfig: []byte("data: /data/active.txt\n"), PassiveConfig: []byte("data: /data/passive.txt\n")})
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, text)
	jobs := map[string]*batchv1.Job{}
	var svc *corev1.Service
	secrets := map[string]string{}
	for _, o := range objs {
		switch x := o.(type) {
		case *batchv1.Job:
			jobs[x.Name] = x
			for _, v := range x.Spec.Template.Spec.Volumes {
				if v.Secret != nil {
					secrets[x.Name] = v.Secret.SecretName
				}
			}
		case *corev1.Service:
			svc = x
		}
	}
	act, pas := jobs["criteo-active"], jobs["criteo-passive"]
	if act == nil || pas == nil || svc == nil || len(objs) != 7 {
		t.Fatalf("%d objects; jobs %v, service %v", len(objs), jobs, svc)
	}
	// The Service selects the active pods, and only them.
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	if !sel.Matches(labels.Set(act.Spec.Template.Labels)) || sel.Matches(labels.Set(pas.Spec.Template.Labels)) {
		t.Errorf("selector %v; active %v; passive %v", svc.Spec.Selector, act.Spec.Template.Labels, pas.Spec.Template.Labels)
	}
	ac := act.Spec.Template.Spec.Containers[0]
	if len(ac.Ports) != 1 || svc.Spec.Ports[0].TargetPort.IntValue() != int(ac.Ports[0].ContainerPort) || svc.Spec.Ports[0].Port != Port {
		t.Errorf("service ports %+v, container ports %+v", svc.Spec.Ports, ac.Ports)
	}
	arg := func(args []string, flag string) string {
		for i := range args {
			if args[i] == flag && i+1 < len(args) {
				return args[i+1]
			}
		}
		return ""
	}
	pc := pas.Spec.Template.Spec.Containers[0]
	if got := arg(pc.Args, "--addr"); got != fmt.Sprintf("%s:%d", svc.Name, Port) {
		t.Errorf("passive dials %q, the Service is %s:%d", got, svc.Name, Port)
	}
	if ac.Args[0] != "active" || pc.Args[0] != "passive" || arg(ac.Args, "--peer-name") != "passive" || arg(pc.Args, "--peer-name") != "active" {
		t.Errorf("args %v / %v", ac.Args, pc.Args)
	}
	if secrets["criteo-active"] != "criteo-active-pki" || secrets["criteo-passive"] != "criteo-passive-pki" {
		t.Errorf("secrets %v", secrets)
	}
	for _, j := range jobs {
		if j.Spec.Template.Spec.SecurityContext == nil || !*j.Spec.Template.Spec.SecurityContext.RunAsNonRoot {
			t.Errorf("%s runs as root", j.Name)
		}
	}
	if strings.Contains(string(text), "PRIVATE KEY") {
		t.Error("a manifest holds a key")
	}
}

func TestSlurmScript(t *testing.T) {
	s, err := SlurmScript(SweepJob{Name: "splitguard-quick", Exe: "/opt/sg", Spec: "/s/q.yaml", Out: "/s/out", Dir: "/s",
		Resources: sweep.Resources{Shards: 5, Jobs: 2, CPUs: 4, MemoryMB: 2048, TimeMinutes: 30, Partition: "gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --array=0-4\n", "#SBATCH --cpus-per-task=4\n", "#SBATCH --mem=2048M\n", "#SBATCH --time=30\n",
		"#SBATCH --partition=gpu\n", "#SBATCH --requeue\n", "#SBATCH --chdir=/s\n", "#SBATCH --output=/s/out/.sweep/slurm/%A_%a.out\n",
		"exec /opt/sg sweep /s/q.yaml --out /s/out --jobs 2\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if _, err := SlurmScript(SweepJob{Name: "x", Exe: "/a b", Spec: "/s", Out: "/o", Dir: "/", Resources: sweep.Resources{Shards: 1}}); err == nil {
		t.Error("a path with a space was accepted")
	}
	if got := JobName("My Quick.yaml"); got != "splitguard-my-quick" {
		t.Errorf("JobName = %q", got)
	}
}
