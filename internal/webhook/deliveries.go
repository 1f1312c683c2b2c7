package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cadre-dev/cadre/internal/safefile"
)

// MaxDeliveries is how many delivery ids are kept: the forges redeliver
// within hours, far fewer than this many deliveries later.
const MaxDeliveries = 10_000

// Deliveries is the bounded set of delivery ids acted on, oldest first,
// kept in a file when it has one.
type Deliveries struct {
	mu    sync.Mutex
	path  string
	max   int
	order []string
	seen  map[string]bool
}

// deliveriesFile is the file's shape.
type deliveriesFile struct {
	Deliveries []string `json:"deliveries"`
}

// OpenDeliveries reads the set kept at path ("": none) holding at most max ids.
// A file that cannot be parsed is an error, not an empty set: acting on
// every redelivery again is what the file is there to prevent.
func OpenDeliveries(path string, max int) (*Deliveries, error) {
	d := &Deliveries{path: path, max: max, seen: map[string]bool{}}
	if path == "" {
		return d, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("webhook: read the deliveries seen: %w", err)
	}
	var f deliveriesFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("webhook: read the deliveries seen: %s: %w", path, err)
	}
	for _, id := range f.Deliveries {
		d.add(id)
	}
	return d, nil
}

// Mark notes delivery id and says whether it is new. An empty id (a
// forge too old to send one) is always new. An error saving the set
// leaves id marked in this process.
func (d *Deliveries) Mark(id string) (bool, error) {
	if id == "" {
		return true, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen[id] {
		return false, nil
	}
	d.add(id)
	if d.path == "" {
		return true, nil
	}
	data, err := json.Marshal(deliveriesFile{Deliveries: d.order})
	if err == nil {
		err = safefile.Replace(d.path, data)
	}
	if err != nil {
		return true, fmt.Errorf("keep the deliveries seen: %w", err)
	}
	return true, nil
}

// add appends id, dropping the oldest beyond max.
func (d *Deliveries) add(id string) {
	if d.seen[id] {
		return
	}
	d.seen[id] = true
	d.order = append(d.order, id)
	if over := len(d.order) - d.max; over > 0 {
		for _, old := range d.order[:over] {
			delete(d.seen, old)
		}
		d.order = append(d.order[:0:0], d.order[over:]...)
	}
}
