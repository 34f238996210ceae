package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/disk"
	"github.com/quanhq/quan/report"
	"github.com/quanhq/quan/sheet"
)

// store is everything quan keeps, as one adapter provides it.
type store interface {
	quan.TemplateStore
	quan.TaskStore
	quan.CouponStore
	quan.ClaimStore
	quan.WalletStore
	quan.CodeStore
}

// FileFlags bound the distribution files quan accepts.
type FileFlags struct {
	MaxUpload       int64
	MaxRows         int64
	MaxUncompressed int64
}

func (f *FileFlags) register(fs *flag.FlagSet) {
	fs.Int64Var(&f.MaxUpload, "max-upload", quan.DefaultMaxFileSize, "largest distribution file accepted, in bytes")
	fs.Int64Var(&f.MaxRows, "max-rows", sheet.DefaultMaxRows, "most data rows in a distribution file")
	fs.Int64Var(&f.MaxUncompressed, "max-uncompressed", sheet.DefaultMaxUncompressed, "most bytes any part of an .xlsx may inflate to (zip-bomb guard)")
}

func (f FileFlags) limits() fileLimits {
	return fileLimits{MaxRows: f.MaxRows, MaxUncompressed: f.MaxUncompressed}
}

// RunnerFlags tune the distribution runner.
type RunnerFlags struct {
	Run       bool
	ChunkSize int
	Lease     time.Duration
	Poll      time.Duration
	Stall     time.Duration
	AckWait   time.Duration
	ChunkConc int
}

func (r *RunnerFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&r.Run, "runner", true, "run distribution tasks in this process (quan worker --runner=false only applies the chunks others publish on a nats:// bus)")
	fs.IntVar(&r.ChunkSize, "chunk-size", 0, "rows applied per transaction (default: the store's recommendation)")
	fs.DurationVar(&r.Lease, "task-lease", 15*time.Second, "how long a dead runner keeps its task before another resumes it")
	fs.DurationVar(&r.Poll, "task-poll", time.Second, "how often the runner looks for due tasks")
	fs.IntVar(&r.ChunkConc, "chunk-concurrency", 2, "with a nats:// bus: how many chunks this process applies at once")
	fs.DurationVar(&r.AckWait, "chunk-ack-wait", quan.DefaultAckWait, "with a nats:// bus: how long a worker may take over a chunk before it goes to another")
	fs.DurationVar(&r.Stall, "chunk-stall", time.Minute, "with a nats:// bus: how long a task may make no progress before its missing chunks are published again")
}

// app is the use cases wired to one store.
type app struct {
	templates   *quan.TemplateService
	tasks       *quan.TaskService
	distributor *quan.Distributor
	claims      *quan.ClaimService  // serve and worker only
	wallet      *quan.WalletService // serve and worker only
	codes       *quan.CodeService   // serve only
}

// wire builds the use cases over st, keeping files in dataDir. chunk is
// the store's recommended chunk size, used unless the flags set one.
func (m *Main) wire(b *backends, dataDir string, ff FileFlags, rf RunnerFlags, logger *slog.Logger) (*app, error) {
	files := &disk.Files{Dir: dataDir}
	limits := ff.limits()
	st, chunk := b.openedStore.store, b.chunkSize
	if rf.ChunkSize > 0 {
		chunk = rf.ChunkSize
	}
	if b.bus != nil && chunk > maxBusChunk {
		// A chunk is one bus message: at most about 80 bytes a row (a
		// failed row keeps 64 bytes of its text), and NATS takes 1 MiB.
		return nil, fmt.Errorf("--chunk-size %d: with a nats:// bus a chunk is one message; use at most %d rows", chunk, maxBusChunk)
	}
	d := &quan.Distributor{
		Store:            st,
		Templates:        st,
		Coupons:          st,
		Cache:            b.cache,
		Bus:              b.bus,
		Stall:            rf.Stall,
		AckWait:          rf.AckWait,
		ChunkConcurrency: rf.ChunkConc,
		Open:             limits.openTaskFile,
		Report:           report.Failures{},
		ReportPath:       files.ReportPath,
		Owner:            runnerName(),
		Lease:            rf.Lease,
		PollInterval:     rf.Poll,
		Now:              m.Now,
		Logger:           logger,
	}
	a := &app{
		templates: &quan.TemplateService{Store: st, Cache: b.cache, Logger: logger, Now: m.Now},
		tasks: &quan.TaskService{
			Tasks:       st,
			Templates:   st,
			Files:       files,
			Check:       limits.checkFile,
			Count:       limits.countRows,
			Wake:        d.Wake,
			Now:         m.Now,
			MaxFileSize: ff.MaxUpload,
			ChunkSize:   chunk,
		},
		distributor: d,
	}
	return a, nil
}

// maxBusChunk is the largest chunk that fits a bus message.
const maxBusChunk = 10_000

// startDistributor runs the distributor in the background: the runner,
// which claims tasks and reads their files, unless runTasks is false, and
// with a bus the chunk consumer. The returned function stops them and
// waits for them.
func (a *app) startDistributor(logger *slog.Logger, runTasks bool) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if runTasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.distributor.Run(ctx); err != nil {
				logger.Error("distributor stopped", "err", err)
			}
		}()
	}
	if a.distributor.Bus != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.distributor.ServeChunks(ctx); err != nil {
				logger.Error("chunk consumer stopped", "err", err)
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// runnerName names this process among the runners sharing a store.
func runnerName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
