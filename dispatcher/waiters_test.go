package dispatcher

import "testing"

// onOthers counts each waiting consumer once per topic it waits on, past
// the topics given, whether they are known anywhere or not.
func TestWaitingOnOtherTopics(t *testing.T) {
	l := newWaitList()
	for _, topics := range [][]string{{"a"}, {"a", "b"}, {"c"}, {"d", "e"}} {
		l.add(newWaiter(topics))
	}
	for _, tc := range []struct {
		listed []string
		want   int
	}{
		{nil, 6},
		{[]string{"a"}, 4},
		{[]string{"a", "b", "c"}, 2},
		{[]string{"a", "b", "c", "d", "e", "f"}, 0},
		{[]string{"x", "y"}, 6},
	} {
		if got := l.onOthers(tc.listed); got != tc.want {
			t.Errorf("waiting past %v: %d, want %d", tc.listed, got, tc.want)
		}
	}
}
