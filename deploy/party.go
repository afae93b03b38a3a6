package deploy

import (
	"fmt"
	"strings"
)

// Port is the active party's gRPC port in the generated manifests.
const Port = 7443

// K8sTraining holds what the manifests of a two-party training run need.
// Each party normally runs in its own organisation's cluster: the active
// party's manifests go to one, the passive party's to the other, and the
// passive party dials the active party's Service (exposed to it by
// whatever the two organisations agree: a LoadBalancer, an ingress, a
// VPN).
type K8sTraining struct {
	// Name prefixes every object ("NAME-active", "NAME-passive").
	Name string
	// Image is the splitguard container image.
	Image string
	// ActiveConfig and PassiveConfig are the parties' config files
	// (`splitguard active --config`, `splitguard passive --config`),
	// shipped in ConfigMaps; their data paths refer to the data volume,
	// mounted at /data.
	ActiveConfig, PassiveConfig []byte
	// ActiveAddr is the address the passive party dials
	// ("": NAME-active:7443, the Service in the same namespace).
	ActiveAddr string
	// CPUs and MemoryMB per party.
	CPUs, MemoryMB int
	// StorageGB of each party's volume claim (data and run directory).
	StorageGB int
}

// K8sTrainingManifests writes the active party's ConfigMap, volume claim,
// Job and Service, then the passive party's ConfigMap, volume claim and
// Job. Certificates come from Secrets that the parties create from the
// files of `splitguard certs` (NAME-active-pki holding active.crt,
// active.key and ca.crt; NAME-passive-pki likewise), mounted read-only at
// /etc/splitguard/pki; the manifests never hold a key.
func K8sTrainingManifests(k K8sTraining) ([]byte, error) {
	k, err := k.withDefaults()
	if err != nil {
		return nil, err
	}
	addr := k.ActiveAddr
	if addr == "" {
		addr = fmt.Sprintf("%s-active:%d", k.Name, Port)
	}
	var objs []obj
	for _, party := range []string{"active", "passive"} {
		name := k.Name + "-" + party
		peer, cfg, listen := "passive", k.ActiveConfig, fmt.Sprintf("0.0.0.0:%d", Port)
		if party == "passive" {
			peer, cfg, listen = "active", k.PassiveConfig, addr
		}
		labels := obj{"app.kubernetes.io/name": "splitguard", "app.kubernetes.io/component": party, "app.kubernetes.io/instance": k.Name}
		objs = append(objs,
			obj{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": obj{"name": name + "-config", "labels": labels},
				"data":     obj{"party.yaml": string(cfg)}},
			obj{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
				"metadata": obj{"name": name + "-data", "labels": labels},
				"spec": obj{"accessModes": []any{"ReadWriteOnce"},
					"resources": obj{"requests": obj{"storage": fmt.Sprintf("%dGi", k.StorageGB)}}}},
			partyJob(name, labels, k.partyContainer(party, peer, listen)))
		if party == "active" {
			objs = append(objs, obj{
				"apiVersion": "v1", "kind": "Service",
				"metadata": obj{"name": name, "labels": labels},
				"spec": obj{
					"selector": obj{"app.kubernetes.io/component": "active", "app.kubernetes.io/instance": k.Name},
					"ports":    []any{obj{"name": "grpc", "port": Port, "targetPort": Port, "protocol": "TCP"}},
				},
			})
		}
	}
	return documents(objs...)
}

// withDefaults checks k's name, image and config files and fills in the
// default resources: 2 CPUs, 8192 MB, a 50 GB volume per party.
func (k K8sTraining) withDefaults() (K8sTraining, error) {
	if !validName(k.Name) {
		return k, fmt.Errorf("deploy: name %q: use lower-case letters, digits and '-', starting with a letter, at most 52 characters", k.Name)
	}
	if k.Image == "" || strings.ContainsAny(k.Image, " \t\n") {
		return k, fmt.Errorf("deploy: image %q: give the splitguard image built from the Dockerfile", k.Image)
	}
	if len(k.ActiveConfig) == 0 || len(k.PassiveConfig) == 0 {
		return k, fmt.Errorf("deploy: both parties' config files are needed")
	}
	if k.CPUs <= 0 {
		k.CPUs = 2
	}
	if k.MemoryMB <= 0 {
		k.MemoryMB = 8192
	}
	if k.StorageGB <= 0 {
		k.StorageGB = 50
	}
	return k, nil
}

// partyContainer is the container of party ("active" or "passive"),
// which talks to peer and listens on (the active) or dials (the passive)
// listen; the active's exposes its port and is ready once it listens.
func (k K8sTraining) partyContainer(party, peer, listen string) obj {
	container := obj{
		"name":    party,
		"image":   k.Image,
		"command": []any{"splitguard"},
		"args": []any{party, "--config", "/etc/splitguard/config/party.yaml",
			"--out", "/data/run-" + party, "--addr", listen,
			"--cert-dir", "/etc/splitguard/pki", "--name", party, "--peer-name", peer},
		"resources": obj{
			"requests": obj{"cpu": fmt.Sprint(k.CPUs), "memory": fmt.Sprintf("%dMi", k.MemoryMB)},
			"limits":   obj{"memory": fmt.Sprintf("%dMi", k.MemoryMB)},
		},
		"volumeMounts": []any{
			obj{"name": "data", "mountPath": "/data"},
			obj{"name": "config", "mountPath": "/etc/splitguard/config", "readOnly": true},
			obj{"name": "pki", "mountPath": "/etc/splitguard/pki", "readOnly": true},
			obj{"name": "tmp", "mountPath": "/tmp"},
		},
		"securityContext": restricted(),
	}
	if party == "active" {
		container["ports"] = []any{obj{"name": "grpc", "containerPort": Port, "protocol": "TCP"}}
		// Ready once it listens: the passive party may then dial.
		container["readinessProbe"] = obj{"tcpSocket": obj{"port": Port}, "periodSeconds": 5}
	}
	return container
}

// partyJob is the Job NAME running a party's container, with its data
// volume claim (NAME-data), config map (NAME-config) and certificates
// (the Secret NAME-pki).
func partyJob(name string, labels, container obj) obj {
	return obj{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": obj{"name": name, "labels": labels},
		"spec": obj{
			// A party that fails resumes from its checkpoints (key
			// checkpoint_every) when Kubernetes restarts it.
			"backoffLimit": 6,
			"template": podTemplate(labels, "OnFailure", container,
				obj{"name": "data", "persistentVolumeClaim": obj{"claimName": name + "-data"}},
				obj{"name": "config", "configMap": obj{"name": name + "-config"}},
				obj{"name": "pki", "secret": obj{"secretName": name + "-pki", "defaultMode": 0o440}},
				obj{"name": "tmp", "emptyDir": obj{}}),
		},
	}
}
