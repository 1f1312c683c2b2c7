// Package answers keeps a client's latest answer to each GET by URL, so
// it can ask again on condition (If-None-Match): GitHub and GitLab answer
// 304, which costs no rate limit, when nothing changed. The least recently
// used go first; the whole set can be written out and taken up by another
// process (cadre watch --once from cron), its secrets masked.
package answers

import (
	"container/list"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Bounds of what a Cache keeps. Following a thousand pull requests asks
// for a handful of URLs each, every one of which must still be kept when
// the pull request is next asked about; an answer bigger than MaxAnswer
// (a long list, a job log) is not worth the memory.
const (
	MaxKept   = 8192
	MaxBytes  = 48 << 20
	MaxAnswer = 1 << 20
)

// Answer is a GET's answer as it came: its validator, the headers a 304
// need not repeat (a Link to the next page), and its body.
type Answer struct {
	URL    string            `json:"url"`
	ETag   string            `json:"etag"`
	Header map[string]string `json:"header,omitempty"`
	Body   []byte            `json:"body"`
	// Link is the Link header as answers written before Header had it;
	// read only.
	Link string `json:"link,omitempty"`
}

// Cache is the kept answers. The zero Cache is empty and ready.
type Cache struct {
	mu    sync.Mutex
	size  int                      // bytes of the bodies kept
	order *list.List               // of *Answer, most recently used first
	byURL map[string]*list.Element // into order
}

// Get returns the answer kept for url.
func (c *Cache) Get(url string) (Answer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byURL[url]
	if !ok {
		return Answer{}, false
	}
	c.order.MoveToFront(el)
	return *el.Value.(*Answer), true
}

// Put keeps a in place of what was kept for its URL; an answer without an
// ETag, or too big, only drops the old one.
func (c *Cache) Put(a Answer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byURL == nil {
		c.order, c.byURL = list.New(), map[string]*list.Element{}
	}
	if el, ok := c.byURL[a.URL]; ok {
		c.remove(el)
	}
	if a.ETag == "" || len(a.Body) > MaxAnswer {
		return
	}
	c.byURL[a.URL] = c.order.PushFront(&a)
	c.size += len(a.Body)
	for c.order.Len() > MaxKept || c.size > MaxBytes {
		c.remove(c.order.Back())
	}
}

// Drop forgets what was kept for url.
func (c *Cache) Drop(url string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byURL[url]; ok {
		c.remove(el)
	}
}

func (c *Cache) remove(el *list.Element) {
	a := c.order.Remove(el).(*Answer)
	delete(c.byURL, a.URL)
	c.size -= len(a.Body)
}

// Marshal writes the kept answers as JSON, most recently used first, each
// body through mask: written to disk, a client's secrets stay masked.
func (c *Cache) Marshal(mask func(string) string) ([]byte, error) {
	c.mu.Lock()
	out := []Answer{}
	if c.order != nil {
		for el := c.order.Front(); el != nil; el = el.Next() {
			a := *el.Value.(*Answer)
			a.Body = []byte(mask(string(a.Body)))
			out = append(out, a)
		}
	}
	c.mu.Unlock()
	return json.Marshal(out)
}

// Unmarshal takes up answers Marshal wrote whose URL starts with prefix
// (the client's own API); what is kept already stays. Data it cannot read
// is refused whole.
func (c *Cache) Unmarshal(data []byte, prefix string) error {
	var in []Answer
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("kept answers: %w", err)
	}
	for i := len(in) - 1; i >= 0; i-- {
		a := in[i]
		if !strings.HasPrefix(a.URL, prefix) {
			continue
		}
		if _, ok := c.Get(a.URL); ok {
			continue
		}
		if a.Link != "" && a.Header["Link"] == "" {
			a.Header = map[string]string{"Link": a.Link}
		}
		a.Link = ""
		c.Put(a)
	}
	return nil
}
