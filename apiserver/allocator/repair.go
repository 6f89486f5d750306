package allocator

import "sort"

// RepairPlan is what a repair pass writes to make the allocation keys
// match what the Services hold.
type RepairPlan struct {
	// Create records items held by a Service but not recorded (the
	// Service was stored by a version that did not record them, or the
	// keys were lost): key → owner.
	Create map[string]string
	// Delete frees recorded items that no Service holds: leaks.
	Delete []string
	// Fix re-records items recorded for another owner than the one
	// holding them: key → owner.
	Fix map[string]string
	// Duplicates lists items held by more than one Service: key → owners.
	// Upstream only reports these; the user must recreate a Service.
	Duplicates map[string][]string
}

// Empty reports whether the plan changes nothing.
func (p RepairPlan) Empty() bool {
	return len(p.Create) == 0 && len(p.Delete) == 0 && len(p.Fix) == 0
}

// PlanRepair compares held (key → owners of the Services holding the item,
// for items in the range) with recorded (key → owner as stored).
func PlanRepair(held map[string][]string, recorded map[string]string) RepairPlan {
	p := RepairPlan{Create: map[string]string{}, Fix: map[string]string{}, Duplicates: map[string][]string{}}
	for key, owners := range held {
		owners = sortedUnique(owners)
		if len(owners) > 1 {
			p.Duplicates[key] = owners
		}
		have, ok := recorded[key]
		switch {
		case !ok:
			p.Create[key] = owners[0]
		case !contains(owners, have):
			p.Fix[key] = owners[0]
		}
	}
	for key := range recorded {
		if _, ok := held[key]; !ok {
			p.Delete = append(p.Delete, key)
		}
	}
	sort.Strings(p.Delete)
	return p
}

func sortedUnique(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	n := 0
	for i, v := range out {
		if i == 0 || v != out[n-1] {
			out[n] = v
			n++
		}
	}
	return out[:n]
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
