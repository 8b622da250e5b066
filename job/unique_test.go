package job

import (
	"errors"
	"fmt"
	"testing"
)

// Standing answers a held unique key as the job that holds it, and every
// other outcome as it came: a success, another refusal, a wrapped holder.
func TestStanding(t *testing.T) {
	held := &UniqueError{Topic: "t", Key: "k", ID: 7, ClientID: "c-7"}
	for _, tc := range []struct {
		name    string
		pushed  Pushed
		err     error
		want    Pushed
		wantErr error
	}{
		{"pushed", Pushed{ID: 1}, nil, Pushed{ID: 1}, nil},
		{"replaced", Pushed{ID: 2, Unique: "replaced"}, nil, Pushed{ID: 2, Unique: "replaced"}, nil},
		{"held", Pushed{}, held, Pushed{ID: 7, ClientID: "c-7", Unique: UniqueHeld}, nil},
		{"held, wrapped", Pushed{}, fmt.Errorf("push: %w", held), Pushed{ID: 7, ClientID: "c-7", Unique: UniqueHeld}, nil},
		{"full", Pushed{}, ErrFull, Pushed{}, ErrFull},
		{"duplicate without a holder", Pushed{}, ErrDuplicate, Pushed{}, ErrDuplicate},
	} {
		got, err := Standing(tc.pushed, tc.err)
		if got != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("%s: %+v, %v; want %+v, %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}
