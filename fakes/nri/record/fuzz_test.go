package record_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/faultline-k8s/faultline/fakes/nri/record"
)

// FuzzReload (the state file an earlier process left): whatever the file
// holds, the restarted plugin starts, with every record it kept readable
// and within the field bounds.
func FuzzReload(f *testing.F) {
	f.Add(`{"seq":1,"boot":0,"plugin":"faultline-a","index":"10","event":"PluginStart","result":"ok","start":"2026-11-22T07:08:41Z"}`+"\n", "1")
	f.Add(`{"seq":99,"ev`, "x")
	f.Add("\x00\x00\nnull\n{}\n[]\n"+`{"seq":18446744073709551615,"event":"RunPodSandbox"}`, "")
	f.Add(`{"seq":2,"event":"CreateContainer","fault":"`+strings.Repeat(`\"`, 3000)+`","message":"\ud800"}`, "-1")
	f.Fuzz(func(t *testing.T, events, boot string) {
		if len(events)+len(boot) > 64<<10 {
			t.Skip()
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(events), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "boot"), []byte(boot), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := record.New(record.Options{Plugin: "faultline-a", Index: "10", Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatalf("restart failed: %v", err)
		}
		defer r.Close()
		for _, e := range r.List("") {
			if e.Event == "" || len(e.Fault) > record.MaxField || len(e.Message) > record.MaxMessage || !utf8.ValidString(e.Message) {
				t.Errorf("kept %+v", e)
			}
		}
	})
}
