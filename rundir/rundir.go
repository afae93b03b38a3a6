// Package rundir writes a run directory, the same files in every mode:
// config.yaml, batches.jsonl, eval.jsonl, epochs.jsonl, summary.json, the
// encoding and the models (formats in docs/RUN-DIRECTORY.md). Its
// [Recorder] is fed one [Observation] per training step by the in-process simulation
// (package run) and by the networked active party (package netrun) alike:
// it audits the step, writes its record, keeps the evaluation history and
// writes the summary. After a rollback to a checkpointed step it rewinds
// the files to what was known at that step.
//
// Every file is written whole to a temporary name and renamed
// (package atomicfile), or appended line by line with one write per line,
// so a crash never leaves half a record.
package rundir

// Files of a run directory.
const (
	// ConfigFile is the resolved configuration.
	ConfigFile = "config.yaml"
	// BatchesFile has one [BatchRecord] per training step.
	BatchesFile = "batches.jsonl"
	// EvalFile has one [EvalRecord] per evaluation.
	EvalFile = "eval.jsonl"
	// EpochsFile has one [EpochRecord] per epoch with an epoch attack.
	EpochsFile = "epochs.jsonl"
	// SummaryFile is the [Summary].
	SummaryFile = "summary.json"
	// EncodingFile is the training data's encoding (data.SaveEncoding;
	// tables only).
	EncodingFile = "encoding"
	// BottomModelFile and TopModelFile are the final models (model Save:
	// parameters and optimiser state).
	BottomModelFile = "bottom.model"
	TopModelFile    = "top.model"
)

// File modes of a run directory: it is created DirMode, and its records
// (label-derived: batches, evaluations, summary), models and encoding
// (feature values) are written FileMode, readable by their owner only, as
// the checkpoints are. config.yaml stays readable by all (0644).
const (
	DirMode  = 0o700
	FileMode = 0o600
)

// PartyBottomFile is the file of passive party NAME's bottom model in a
// run with several passive parties, for every party but the first, whose
// bottom is BottomModelFile as in a one-passive run.
func PartyBottomFile(name string) string { return "bottom_" + name + ".model" }
