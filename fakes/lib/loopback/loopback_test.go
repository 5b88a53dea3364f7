package loopback

import "testing"

func TestCheck(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080":  true,
		"127.0.0.2:8080":  true,
		"[::1]:8080":      true,
		"127.0.0.1:0":     true,
		":8080":           false, // every interface
		"0.0.0.0:8080":    false,
		"[::]:8080":       false,
		"10.244.1.7:8080": false,
		"localhost:8080":  false, // a name may resolve to anything
		"example.com:80":  false,
		"127.0.0.1":       false, // no port
		"":                false,
	} {
		if err := Check(addr); (err == nil) != ok {
			t.Errorf("%q: %v", addr, err)
		}
	}
}

func TestListen(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if _, err := Listen(":0"); err == nil {
		t.Error("listening on every interface must be refused")
	}
}
