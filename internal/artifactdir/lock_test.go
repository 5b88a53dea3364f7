package artifactdir

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// holdEnv makes the test binary, run again, claim a directory and hold it
// until its standard input closes: another run, in another process.
const holdEnv = "FAULTLINE_ARTIFACTDIR_HOLD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		if _, err := Claim(dir, "--artifacts", "the other run"); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("held")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes it
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Two runs on one artifacts directory would remove each other's results:
// the second is refused while the first runs, and takes it once the first
// has ended (its process gone, the lock with it).
func TestSecondRunRefusedWhileTheFirstRuns(t *testing.T) {
	dir := t.TempDir()
	other := exec.Command(os.Args[0], "-test.run", "^$")
	other.Env = append(os.Environ(), holdEnv+"="+dir)
	stdin, err := other.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := other.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		t.Fatalf("the other run: %q", line)
	}
	_, err = Claim(dir, "--artifacts", "this run")
	if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "in use by another faultline run") {
		t.Fatalf("claim while another run holds it: %v, want a refusal naming the other run", err)
	}
	stdin.Close()
	if err := other.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := Claim(dir, "--artifacts", "this run"); err != nil {
		t.Fatalf("claim after the other run ended: %v", err)
	}
}
