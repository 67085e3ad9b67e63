package variant_test

import (
	"testing"

	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/variant"
)

// cad has one cost-limit sentinel: variant's is celfn's.
func TestOneCostLimitSentinel(t *testing.T) {
	if variant.ErrCostLimit != celfn.ErrCostLimit {
		t.Fatal("variant.ErrCostLimit is not celfn.ErrCostLimit")
	}
}
