package store

import (
	"errors"
	"testing"
)

func TestKV(t *testing.T) {
	db := openTemp(t)
	if _, err := db.GetKV("missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetKV(missing) error = %v, want ErrNotFound", err)
	}
	if err := db.PutKV("a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := db.PutKV("a", []byte("2")); err != nil {
		t.Fatal(err)
	}
	v, err := db.GetKV("a")
	if err != nil || string(v) != "2" {
		t.Fatalf("GetKV(a) = %q, %v; want 2", v, err)
	}
	// The returned slice is a copy: changing it does not change the store.
	v[0] = 'x'
	if v2, _ := db.GetKV("a"); string(v2) != "2" {
		t.Errorf("GetKV returned memory shared with the store: now %q", v2)
	}
}

func TestPutKVIfAbsent(t *testing.T) {
	db := openTemp(t)
	got, err := db.PutKVIfAbsent("key", []byte("first"))
	if err != nil || string(got) != "first" {
		t.Fatalf("first PutKVIfAbsent = %q, %v", got, err)
	}
	got, err = db.PutKVIfAbsent("key", []byte("second"))
	if err != nil || string(got) != "first" {
		t.Fatalf("second PutKVIfAbsent = %q, %v; want the stored first", got, err)
	}
	if v, _ := db.GetKV("key"); string(v) != "first" {
		t.Errorf("stored value = %q, want first", v)
	}
}
