// Package integrity holds the misbehaviour of a party that cheats and
// its detection during a run (docs/methods/integrity.md): free-riding
// passive parties (Tamper: noise, constant, replay), each registered
// with RegisterTamper, and the active party's detectors of a training
// batch's embedding (Detector: replay, collapse), each registered with
// RegisterDetector. The contribution measure (the validation AUC
// without the passive party's embedding) is computed by the active
// party (active.Config.Contribution). Nothing here holds a label: the
// passive party may apply a Tamper.
package integrity
