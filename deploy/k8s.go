package deploy

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/splitguard/splitguard/sweep"
)

// Paths inside the containers of the generated Kubernetes manifests.
const (
	// K8sSweepDir is where the sweep directory's volume claim is mounted.
	K8sSweepDir = "/sweep"
	// K8sSpecPath is where the sweep file (from a ConfigMap) is mounted.
	K8sSpecPath = "/etc/splitguard/sweep.yaml"
	// K8sUID is the non-root user the image runs as (Dockerfile).
	K8sUID = 65532
)

// K8sSweep holds what the Kubernetes manifests of a sweep need.
type K8sSweep struct {
	// Name names the ConfigMap, volume claim and Job.
	Name string
	// Image is the splitguard container image (built from the
	// repository's Dockerfile).
	Image string
	// SpecText is the sweep file's content, shipped in a ConfigMap.
	SpecText []byte
	// Resources per shard (defaults already applied).
	Resources sweep.Resources
	// StorageClass of the volume claim ("": the cluster's default). With
	// more than one shard it must offer ReadWriteMany (NFS, CephFS, …).
	StorageClass string
}

// obj is one manifest, as an ordered YAML document.
type obj = map[string]any

// K8sSweepManifests writes three documents: a ConfigMap with the sweep
// file, a PersistentVolumeClaim for the sweep directory (ReadWriteMany:
// every shard's pod writes it), and an Indexed Job of Shards completions,
// all in parallel, each pod running `splitguard sweep` with its shard from
// JOB_COMPLETION_INDEX and SPLITGUARD_SHARD_COUNT. A pod that fails is
// retried (backoffLimitPerIndex) and resumes its shard.
func K8sSweepManifests(k K8sSweep) ([]byte, error) {
	if !validName(k.Name) {
		return nil, fmt.Errorf("deploy: name %q: use lower-case letters, digits and '-', starting with a letter, at most 52 characters", k.Name)
	}
	if k.Image == "" || strings.ContainsAny(k.Image, " \t\n") {
		return nil, fmt.Errorf("deploy: image %q: give the splitguard image built from the Dockerfile, e.g. registry.example.com/splitguard:v1", k.Image)
	}
	r := k.Resources
	if r.Shards < 1 {
		return nil, fmt.Errorf("deploy: %d shards", r.Shards)
	}
	labels := obj{"app.kubernetes.io/name": "splitguard", "app.kubernetes.io/component": "sweep", "app.kubernetes.io/instance": k.Name}
	cm := obj{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": obj{"name": k.Name + "-spec", "labels": labels},
		"data":     obj{"sweep.yaml": string(k.SpecText)},
	}
	pvcSpec := obj{
		"accessModes": []any{"ReadWriteMany"},
		"resources":   obj{"requests": obj{"storage": fmt.Sprintf("%dGi", r.StorageGB)}},
	}
	if k.StorageClass != "" {
		pvcSpec["storageClassName"] = k.StorageClass
	}
	pvc := obj{
		"apiVersion": "v1", "kind": "PersistentVolumeClaim",
		"metadata": obj{"name": k.Name + "-out", "labels": labels},
		"spec":     pvcSpec,
	}
	res := obj{
		"requests": obj{"cpu": fmt.Sprint(r.CPUs), "memory": fmt.Sprintf("%dMi", r.MemoryMB)},
		"limits":   obj{"memory": fmt.Sprintf("%dMi", r.MemoryMB)},
	}
	container := obj{
		"name":    "sweep",
		"image":   k.Image,
		"command": []any{"splitguard"},
		"args":    []any{"sweep", K8sSpecPath, "--out", K8sSweepDir, "--jobs", fmt.Sprint(r.Jobs)},
		"env": []any{
			// JOB_COMPLETION_INDEX is set by Kubernetes in Indexed Jobs.
			obj{"name": sweep.EnvShardCount, "value": fmt.Sprint(r.Shards)},
		},
		"resources": res,
		"volumeMounts": []any{
			obj{"name": "out", "mountPath": K8sSweepDir},
			obj{"name": "spec", "mountPath": "/etc/splitguard", "readOnly": true},
			obj{"name": "tmp", "mountPath": "/tmp"},
		},
		"securityContext": restricted(),
	}
	job := obj{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": obj{"name": k.Name, "labels": labels},
		"spec": obj{
			"completionMode":        "Indexed",
			"completions":           r.Shards,
			"parallelism":           r.Shards,
			"backoffLimitPerIndex":  3,
			"maxFailedIndexes":      r.Shards,
			"activeDeadlineSeconds": r.TimeMinutes * 60,
			"template": podTemplate(labels, "Never", container,
				obj{"name": "out", "persistentVolumeClaim": obj{"claimName": k.Name + "-out"}},
				obj{"name": "spec", "configMap": obj{"name": k.Name + "-spec"}},
				obj{"name": "tmp", "emptyDir": obj{}}),
		},
	}
	return documents(cm, pvc, job)
}

// podTemplate is a Job's pod template: one container, run as podSecurity
// says, restarted by restartPolicy, with the volumes.
func podTemplate(labels obj, restartPolicy string, container obj, volumes ...any) obj {
	return obj{
		"metadata": obj{"labels": labels},
		"spec": obj{
			"restartPolicy":   restartPolicy,
			"securityContext": podSecurity(),
			"containers":      []any{container},
			"volumes":         volumes,
		},
	}
}

// podSecurity runs every container as the image's non-root user, with a
// group that owns the mounted volumes.
func podSecurity() obj {
	return obj{
		"runAsNonRoot":   true,
		"runAsUser":      K8sUID,
		"runAsGroup":     K8sUID,
		"fsGroup":        K8sUID,
		"seccompProfile": obj{"type": "RuntimeDefault"},
	}
}

// restricted is the container security context of the Pod Security
// Standards' "restricted" level.
func restricted() obj {
	return obj{
		"allowPrivilegeEscalation": false,
		"readOnlyRootFilesystem":   true,
		"capabilities":             obj{"drop": []any{"ALL"}},
	}
}

// documents joins objects into one multi-document YAML text.
func documents(objs ...obj) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(o); err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
	}
	return buf.Bytes(), nil
}
