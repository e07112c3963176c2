package grants

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-dev/switchboard/store/bolt"
)

func TestMain(m *testing.M) {
	bolt.RunChildCheckIfAsked() // the store checks an existing file in a child: this binary
	goleak.VerifyTestMain(m)
}
