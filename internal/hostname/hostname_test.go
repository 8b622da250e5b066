package hostname

import "testing"

func TestLocal(t *testing.T) {
	allowed := []string{"Gmq.Internal"}
	for host, want := range map[string]bool{
		"": true, "localhost": true, "localhost:8000": true, "app.localhost": true, "LOCALHOST": true,
		"127.0.0.1": true, "127.0.0.1:8000": true, "127.9.9.9": true, "[::1]:8000": true, "::1": true,
		"gmq.internal": true, "gmq.internal:8000": true,
		"evil.example": false, "evil.example:8000": false, "127.0.0.1.evil.example": false,
		"localhost.evil.example": false, "10.0.0.1": false, "[::2]:80": false, "gmq.internal.evil": false,
	} {
		if got := Local(host, allowed); got != want {
			t.Errorf("Local(%q) = %v, want %v", host, got, want)
		}
	}
}
