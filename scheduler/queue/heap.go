package queue

import "container/heap"

// podHeap is a heap of queued pods with lookup by key, so that a pod can
// be updated or removed wherever it sits.
type podHeap struct {
	items []*QueuedPodInfo
	index map[string]int
	less  func(a, b *QueuedPodInfo) bool
}

func newPodHeap(less func(a, b *QueuedPodInfo) bool) *podHeap {
	return &podHeap{index: map[string]int{}, less: less}
}

// heap.Interface, on the slice.
func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.items[i].key] = i
	h.index[h.items[j].key] = j
}
func (h *podHeap) Push(x any) {
	p := x.(*QueuedPodInfo)
	h.index[p.key] = len(h.items)
	h.items = append(h.items, p)
}
func (h *podHeap) Pop() any {
	n := len(h.items) - 1
	p := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	delete(h.index, p.key)
	return p
}

// addOrUpdate inserts p, or replaces the pod with p's key.
func (h *podHeap) addOrUpdate(p *QueuedPodInfo) {
	if i, ok := h.index[p.key]; ok {
		h.items[i] = p
		heap.Fix(h, i)
		return
	}
	heap.Push(h, p)
}

func (h *podHeap) get(key string) (*QueuedPodInfo, bool) {
	i, ok := h.index[key]
	if !ok {
		return nil, false
	}
	return h.items[i], true
}

func (h *podHeap) remove(key string) (*QueuedPodInfo, bool) {
	i, ok := h.index[key]
	if !ok {
		return nil, false
	}
	return heap.Remove(h, i).(*QueuedPodInfo), true
}

func (h *podHeap) peek() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *podHeap) pop() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return heap.Pop(h).(*QueuedPodInfo)
}
