package rundir

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
)

// LoadRun is the one place an offline attack reloads an in-process run
// directory (splitguard attack completion and attack features): its
// resolved configuration ([LoadRunConfig]) and its data as the run trained
// on it ([LoadRunData]).
func LoadRun(dir string) (*config.Config, *data.Split, error) {
	cfg, err := LoadRunConfig(dir)
	if err != nil {
		return nil, nil, err
	}
	split, err := LoadRunData(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, split, nil
}

// LoadRunConfig reads the resolved configuration of the run in dir.
func LoadRunConfig(dir string) (*config.Config, error) {
	cfg, err := config.LoadYAML(filepath.Join(dir, ConfigFile), config.Default())
	if err != nil {
		return nil, err
	}
	cfg.Resolve()
	return &cfg, nil
}

// LoadRunData reloads the data of the run cfg describes as the run trained
// on it: the same seeded split, rows in canonical order (by ID), the
// training rows without the validation rows (decided by the keyed hash,
// as in the run). The features are every column; the caller cuts its
// party's view.
func LoadRunData(cfg *config.Config) (*data.Split, error) {
	split, err := cfg.LoadData()
	if err != nil {
		return nil, err
	}
	split.SortByID()
	split.Train, _ = data.SplitValidation(split.Train, cfg.Seed, cfg.ValFrac)
	return split, nil
}

// ReadModel reads the model file path, buffered, with load (a bottom's or
// a top's Load), naming the file and the likely cause when it does not load.
func ReadModel(path string, load func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := load(bufio.NewReader(f)); err != nil {
		return fmt.Errorf("model %s: %w (was it trained with this configuration?)", path, err)
	}
	return nil
}
