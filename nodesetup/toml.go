package nodesetup

// Reading the runtimes' TOML configs: parsed into plain maps (tables are
// map[string]any), never into the runtimes' own types, so that node-setup
// reads any config the runtime reads and keeps what it does not know.

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"
)

// parseTOML parses a config file. Any input gives a tree or an error, never
// a panic (FuzzParseContainerdConfig, FuzzParseCRIOConfig).
func parseTOML(data []byte) (tree map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			tree, err = nil, fmt.Errorf("TOML parser failed: %v", r)
		}
	}()
	tree = map[string]any{}
	if _, err := toml.Decode(string(data), &tree); err != nil {
		return nil, err
	}
	return tree, nil
}

// lookup walks tables by key.
func lookup(tree map[string]any, keys ...string) (any, bool) {
	var cur any = tree
	for _, k := range keys {
		table, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = table[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// keyPath is keys followed by more, in a slice of its own.
func keyPath(keys []string, more ...string) []string {
	return append(append(make([]string, 0, len(keys)+len(more)), keys...), more...)
}

// stringAt is lookup for a string ("" if absent or another type).
func stringAt(tree map[string]any, keys ...string) string {
	v, _ := lookup(tree, keys...)
	s, _ := v.(string)
	return s
}

// boolAt is lookup for a boolean (nil if absent or another type).
func boolAt(tree map[string]any, keys ...string) *bool {
	v, _ := lookup(tree, keys...)
	b, ok := v.(bool)
	if !ok {
		return nil
	}
	return &b
}

// merge lays over onto base, as the runtimes read a drop-in over what
// came before: tables merge key by key, anything else is replaced. base is
// changed; over is not (its tables are copied).
func merge(base, over map[string]any) {
	for k, v := range over {
		ov, isTable := v.(map[string]any)
		if !isTable {
			base[k] = v
			continue
		}
		bv, ok := base[k].(map[string]any)
		if !ok {
			bv = map[string]any{}
			base[k] = bv
		}
		merge(bv, ov)
	}
}

// without returns a deep copy of tree without the table at keys, and without
// the tables on the way to it that are empty then and absent from like:
// the tree tree would be had the table never been added to like.
func without(tree, like map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	merge(out, tree)
	var prune func(t, l map[string]any, keys []string)
	prune = func(t, l map[string]any, keys []string) {
		if len(keys) == 1 {
			delete(t, keys[0])
			return
		}
		child, ok := t[keys[0]].(map[string]any)
		if !ok {
			return
		}
		var lchild map[string]any
		if l != nil {
			lchild, _ = l[keys[0]].(map[string]any)
		}
		prune(child, lchild, keys[1:])
		if _, inLike := l[keys[0]]; len(child) == 0 && !inLike {
			delete(t, keys[0])
		}
	}
	prune(out, like, keys)
	return out
}

func sameTree(a, b map[string]any) bool { return reflect.DeepEqual(a, b) }

// inlineTableAbove reports whether the config defines keys, or a table on
// the way to it, as an inline table ("runtimes = { runc = {...} }"). TOML
// forbids adding to an inline table, and containerd's parser refuses it,
// but ours (BurntSushi/toml) allows it, so it is looked for in the text:
// line by line, each table header and each key whose value opens with {
// parsed on its own. A line it cannot read so (inside a multi-line string
// or array) is passed over.
func inlineTableAbove(data []byte, keys []string) bool {
	var current []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			if tree, err := parseTOML([]byte(line)); err == nil {
				current = firstPath(tree)
			}
			continue
		}
		brace := strings.Index(line, "{")
		if brace < 0 {
			continue
		}
		// The key is what comes before the = that ends it.
		for i := 0; i < brace; i++ {
			if line[i] != '=' {
				continue
			}
			tree, err := parseTOML([]byte(line[:i] + "= 0"))
			if err != nil {
				continue
			}
			if root := keyPath(current, firstPath(tree)...); isPrefix(root, keys) {
				return true
			}
			break
		}
	}
	return false
}

// firstPath follows a tree's first key down to a value that is not a table
// (a one-key tree, as a header or a key parses into); an array of tables
// counts as its first table.
func firstPath(tree map[string]any) []string {
	var out []string
	for {
		if len(tree) != 1 {
			return out
		}
		for k, v := range tree {
			out = append(out, k)
			switch next := v.(type) {
			case map[string]any:
				tree = next
			case []map[string]any:
				if len(next) == 0 {
					return out
				}
				tree = next[len(next)-1]
			default:
				return out
			}
		}
	}
}

func isPrefix(prefix, keys []string) bool {
	if len(prefix) == 0 || len(prefix) > len(keys) {
		return false
	}
	for i := range prefix {
		if prefix[i] != keys[i] {
			return false
		}
	}
	return true
}
