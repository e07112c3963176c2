package held

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

func TestExpiresAfterTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New[string](time.Hour, 4)
		h.Put("a", "A")
		time.Sleep(time.Hour)
		if v, ok := h.Get("a"); !ok || v != "A" {
			t.Fatalf("Get at the TTL = %q, %v; want A", v, ok)
		}
		time.Sleep(time.Second)
		if v, ok := h.Get("a"); ok {
			t.Fatalf("Get after the TTL = %q; want nothing", v)
		}
	})
}

func TestOldestGoesFirstWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New[int](time.Hour, 3)
		for i := range 5 {
			h.Put(strconv.Itoa(i), i)
			time.Sleep(time.Second)
		}
		for i := range 5 {
			_, ok := h.Get(strconv.Itoa(i))
			if want := i >= 2; ok != want {
				t.Errorf("Get(%d) held = %v; want %v (the 3 newest)", i, ok, want)
			}
		}
	})
}

func TestTakeAnswersOnce(t *testing.T) {
	h := New[int](time.Hour, 3)
	h.Put("s", 1)
	if v, ok := h.Take("s"); !ok || v != 1 {
		t.Fatalf("Take = %d, %v; want 1", v, ok)
	}
	if _, ok := h.Take("s"); ok {
		t.Fatal("a second Take found it again")
	}
}

func TestDeleteFunc(t *testing.T) {
	h := New[string](time.Hour, 8)
	h.Put("1", "srv-a")
	h.Put("2", "srv-b")
	h.Put("3", "srv-a")
	h.DeleteFunc(func(_ string, v string) bool { return v == "srv-a" })
	for key, want := range map[string]bool{"1": false, "2": true, "3": false} {
		if _, ok := h.Get(key); ok != want {
			t.Errorf("Get(%s) held = %v; want %v", key, ok, want)
		}
	}
}
