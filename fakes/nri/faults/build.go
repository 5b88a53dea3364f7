package faults

// Building fault annotations from typed values: the inverse of Parse and
// For, next to them so that the two cannot drift apart (build_test.go
// checks that what Value and Annotation write, Parse and For read back
// identically).

import (
	"strconv"
	"strings"
)

// Value is the annotation value that asks for f (its Mode, Stall, Times and
// Container; Key and Value are ignored): Parse(Value(f)) is f. It writes
// what it is given; the plugin's parser rejects what makes no sense (a
// stall without a duration, container= on a pod event) when the event
// comes.
func Value(f Fault) string {
	var b strings.Builder
	b.WriteString(string(f.Mode))
	if f.Mode == Stall {
		b.WriteString("=" + f.Stall.String())
	}
	if f.Times > 0 {
		b.WriteString(";times=" + strconv.Itoa(f.Times))
	}
	if f.Container != "" {
		b.WriteString(";container=" + f.Container)
	}
	return b.String()
}

// Annotation returns the pod annotation that makes instance inject f into
// event: For(map[key]value, instance, event, f.Container) is f.
func Annotation(instance, event string, f Fault) (key, value string) {
	return Key(instance, event), Value(f)
}
