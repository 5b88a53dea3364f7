package nri

import (
	"testing"
	"time"

	"github.com/faultline-k8s/faultline/fakes/nri/record"
)

func TestOwnConnectionChangesLeavesOutDropsOfEveryPlugin(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 16, 50, 20, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	answered := record.Event{Seq: 10, Event: "RunPodSandbox", PodUID: "victim", Result: record.Error, Start: t0, End: at(time.Millisecond)}
	conn := func(seq uint64, event string, when time.Duration) record.Event {
		return record.Event{Seq: seq, Event: event, Result: record.OK, Start: at(when), End: at(when)}
	}
	lostByAll := func(when time.Duration) map[string][]record.Event {
		out := map[string][]record.Event{}
		for _, i := range Instances {
			if i.Name != K.Name {
				out[i.Name] = []record.Event{conn(3, record.Disconnected, when+2*time.Millisecond)}
			}
		}
		return out
	}

	for _, tc := range []struct {
		name       string
		others     map[string][]record.Event
		k          []record.Event
		mine, left int
	}{{
		name:   "every plugin dropped 12 s after the answer: the runtime's own reason",
		others: lostByAll(12 * time.Second),
		k: []record.Event{answered, conn(11, record.Disconnected, 12*time.Second),
			conn(12, record.Synchronize, 12*time.Second+100*time.Millisecond),
			{Seq: 13, Event: "RunPodSandbox", PodUID: "victim", Result: record.OK, Start: at(13 * time.Second)}},
		mine: 0, left: 2,
	}, {
		name:   "every plugin dropped right after the answer: it may be the answer's doing",
		others: lostByAll(5 * time.Millisecond),
		k:      []record.Event{answered, conn(11, record.Disconnected, 5*time.Millisecond), conn(12, record.Synchronize, 100*time.Millisecond)},
		mine:   2, left: 0,
	}, {
		name:   "only K dropped",
		others: map[string][]record.Event{},
		k:      []record.Event{answered, conn(11, record.Disconnected, 12*time.Second), conn(12, record.Synchronize, 12*time.Second+100*time.Millisecond)},
		mine:   2, left: 0,
	}, {
		name:   "a new process is K's own even after a drop of all",
		others: lostByAll(12 * time.Second),
		k: []record.Event{answered, conn(11, record.Disconnected, 12*time.Second),
			conn(12, record.PluginStart, 13*time.Second), conn(13, record.Synchronize, 13*time.Second+100*time.Millisecond)},
		mine: 2, left: 1,
	}, {
		name:   "what came before the answer does not count",
		others: lostByAll(-time.Minute),
		k:      []record.Event{conn(5, record.Disconnected, -time.Minute), conn(6, record.Synchronize, -time.Minute), answered},
		mine:   0, left: 0,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			records := map[string][]record.Event{K.Name: tc.k}
			for name, own := range tc.others {
				records[name] = own
			}
			mine, left := ownConnectionChanges(K, answered, records)
			if len(mine) != tc.mine || len(left) != tc.left {
				t.Errorf("got %d own and %d left out, want %d and %d:\nown %+v\nleft out %+v", len(mine), len(left), tc.mine, tc.left, mine, left)
			}
		})
	}
}
