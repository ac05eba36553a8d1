package bridge

import (
	"errors"
	"testing"
)

func TestDecodeReply(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     Reply
		wantErr  bool
		rejected bool
	}{
		{name: "all processed", in: `{"response":"success","info":"processed: 3; failed: 0; total: 3; seconds spent: 0.000055"}`,
			want: Reply{Response: "success", Processed: 3, Total: 3, Seconds: 0.000055}},
		{name: "some failed", in: `{"response":"success","info":"processed: 1; failed: 2; total: 3; seconds spent: 0.1"}`,
			want: Reply{Response: "success", Processed: 1, Failed: 2, Total: 3, Seconds: 0.1}},
		{name: "no seconds field", in: `{"response":"success","info":"processed: 0; failed: 1; total: 1"}`,
			want: Reply{Response: "success", Failed: 1, Total: 1}},
		{name: "unknown field tolerated", in: `{"response":"success","info":"processed: 1; failed: 0; total: 1; queued: 5"}`,
			want: Reply{Response: "success", Processed: 1, Total: 1}},
		{name: "rejected", in: `{"response":"failed","info":"cannot parse"}`, wantErr: true, rejected: true},
		{name: "no response", in: `{"info":"processed: 1; failed: 0; total: 1"}`, wantErr: true},
		{name: "counts do not add up", in: `{"response":"success","info":"processed: 1; failed: 1; total: 3"}`, wantErr: true},
		{name: "missing total", in: `{"response":"success","info":"processed: 1; failed: 0"}`, wantErr: true},
		{name: "repeated field instead of total", in: `{"response":"success","info":"processed: 1; failed: 0; failed: 0"}`, wantErr: true},
		{name: "negative", in: `{"response":"success","info":"processed: -1; failed: 2; total: 1"}`, wantErr: true},
		{name: "not a number", in: `{"response":"success","info":"processed: x; failed: 0; total: 0"}`, wantErr: true},
		{name: "bad seconds", in: `{"response":"success","info":"processed: 0; failed: 0; total: 0; seconds spent: x"}`, wantErr: true},
		{name: "no colon", in: `{"response":"success","info":"processed 1"}`, wantErr: true},
		{name: "truncated JSON", in: `{"response":"success","info":"processed: 1; fai`, wantErr: true},
		{name: "not JSON", in: `OK`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeReply([]byte(tc.in))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error, got %+v", got)
				}
				if errors.Is(err, ErrRejected) != tc.rejected {
					t.Fatalf("err = %v, rejected want %v", err, tc.rejected)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Info = ""
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
