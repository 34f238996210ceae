package quantest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/quanhq/quan"
)

// testDistributionStampede races several tasks' chunks over overlapping
// users of one template against many single takes of its stock (the
// stand-in for claims), all released at once: nothing is oversold, the
// stock never goes below zero, and nobody ends above the per-user limit.
func testDistributionStampede(t *testing.T, s TaskStores) {
	const (
		initial   = 1200
		limit     = 2
		nTasks    = 4
		nChunks   = 5
		chunkRows = 100
		nUsers    = 700 // each task's file holds 500 distinct users of these
		takers    = 400
	)
	tpl := activeTemplate(t, s, "stampede", initial, limit)

	tasks := make([]*quan.Task, nTasks)
	files := make([][]int64, nTasks)
	appearances := map[int64]int64{}
	for i := range tasks {
		tasks[i] = runningTask(t, s, tpl, fmt.Sprint("stampede ", i))
		rnd := rand.New(rand.NewPCG(uint64(i), 42))
		for _, k := range rnd.Perm(nUsers)[:nChunks*chunkRows] {
			u := int64(1_000_000 + k)
			files[i] = append(files[i], u)
			appearances[u]++
		}
	}
	var demand int64 // the coupons the files could take with stock to spare
	for _, n := range appearances {
		demand += min(n, limit)
	}
	if demand+takers <= initial {
		t.Fatalf("the suite's stampede asks for %d coupons and %d takes, which fits in the stock of %d", demand, takers, initial)
	}

	var (
		start    = make(chan struct{})
		wg       sync.WaitGroup
		taken    atomic.Int64
		counts   = make([]quan.TaskCounts, nTasks)
		failures firstErrors
	)
	for i, task := range tasks {
		wg.Go(func() {
			<-start
			for seq := int64(1); seq <= nChunks; seq++ {
				rows := make([]quan.ChunkRow, 0, chunkRows)
				for j, u := range files[i][(seq-1)*chunkRows : seq*chunkRows] {
					rows = append(rows, user(int64(2+int(seq-1)*chunkRows+j), u))
				}
				n, err := s.Tasks.ApplyChunk(t.Context(), chunk(task, seq, rows...))
				if err != nil {
					failures.add(fmt.Errorf("task %d chunk %d: %w", task.ID, seq, err))
					return
				}
				counts[i].Add(n)
			}
		})
	}
	for range takers {
		wg.Go(func() {
			<-start
			_, err := s.Templates.AdjustStock(t.Context(), tpl.ID, -1)
			switch {
			case err == nil:
				taken.Add(1)
			case !errors.Is(err, quan.ErrOutOfStock):
				failures.add(fmt.Errorf("AdjustStock(-1): %w", err))
			}
		})
	}
	close(start)
	wg.Wait()
	failures.report(t)
	if t.Failed() {
		return
	}

	got := get(t, s.Templates, tpl.ID)
	st := stats(t, s, tpl.ID, 0)
	var issuedSum, outOfStock int64
	for i, n := range counts {
		issuedSum += n.Issued
		outOfStock += n.Failed.OutOfStock
		f := n.Failed
		if n.Rows != nChunks*chunkRows || n.Issued+f.LimitReached+f.OutOfStock != n.Rows || n.FailedTotal() != f.LimitReached+f.OutOfStock {
			t.Errorf("task %d counts %+v: want %d rows, each issued, limit_reached or out_of_stock", tasks[i].ID, n, nChunks*chunkRows)
		}
		if stored := getTask(t, s, tasks[i].ID).Counts; stored != n {
			t.Errorf("task %d stores counts %+v, its chunks returned %+v", tasks[i].ID, stored, n)
		}
	}
	t.Logf("%d coupons issued, %d takes, %d left; %d rows out of stock", st.Coupons, taken.Load(), got.Stock, outOfStock)
	if got.Stock < 0 {
		t.Errorf("stock %d", got.Stock)
	}
	if st.Coupons != issuedSum || st.FromTask != issuedSum {
		t.Errorf("%d coupons, %d from tasks; the chunks issued %d", st.Coupons, st.FromTask, issuedSum)
	}
	if st.Coupons+taken.Load()+got.Stock != initial {
		t.Errorf("%d issued + %d taken + %d left = %d, want the initial stock %d",
			st.Coupons, taken.Load(), got.Stock, st.Coupons+taken.Load()+got.Stock, initial)
	}
	if outOfStock > 0 && got.Stock != 0 {
		t.Errorf("%d rows were out of stock, yet %d is left: stock only goes down here", outOfStock, got.Stock)
	}
	if st.MaxPerUser > limit {
		t.Errorf("a user holds %d coupons, above the limit of %d", st.MaxPerUser, limit)
	}
	// Each user holds receive sequences 1 … n, each once.
	for u := range appearances {
		cs := coupons(t, s, u, tpl.ID)
		seen := map[int64]bool{}
		for _, c := range cs {
			if c.Seq < 1 || c.Seq > int64(len(cs)) || seen[c.Seq] {
				t.Errorf("user %d holds coupons with seqs out of 1 … %d: seq %d", u, len(cs), c.Seq)
			}
			seen[c.Seq] = true
		}
	}
}
