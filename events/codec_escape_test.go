package events

import (
	"testing"
	"time"
)

// TestEncodeKeepsCanonicalStrings: canonical values holding '<', '>', '&', U+2028 or U+2029
// survive an encode/decode round trip unchanged (json.Marshal would \u-escape them).
func TestEncodeKeepsCanonicalStrings(t *testing.T) {
	args, err := Canonical([]byte(`{"q":"a<b&c>d\u2028e\u2029"}`))
	if err != nil {
		t.Fatal(err)
	}
	e := New("s", "r", time.Unix(0, 0), ToolCalled{CallID: "c", Tool: "t", Args: args})
	e.Seq, e.Source = 1, Source{Kind: SourceHarness, ID: "w"}
	b, err := Encode(&e)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	d, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(Encode(e)) = %v", err)
	}
	if got := string(d.Payload.(ToolCalled).Args); got != string(args) {
		t.Fatalf("args after round trip = %s, want %s", got, args)
	}
}
