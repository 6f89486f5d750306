package runtime

import "testing"

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int64
		want string
	}{
		{"a negative count keeps everything", "a\nb\nc\n", -1, "a\nb\nc\n"},
		{"zero lines is empty", "a\nb\n", 0, ""},
		{"the last line keeps its newline", "a\nb\nc\n", 1, "c\n"},
		{"two lines of three", "a\nb\nc\n", 2, "b\nc\n"},
		{"more lines than there are is everything", "a\nb\n", 5, "a\nb\n"},
		{"an unterminated last line counts", "a\nb", 1, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(Tail([]byte(tc.in), tc.n)); got != tc.want {
				t.Errorf("Tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}

func TestNormalizeImage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"busybox", "docker.io/library/busybox:latest"},
		{"localhost:5000/x:1", "localhost:5000/x:1"},
	} {
		got, err := NormalizeImage(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("NormalizeImage(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := NormalizeImage("Bad Name"); err == nil {
		t.Error("NormalizeImage accepted an invalid name")
	}
}
