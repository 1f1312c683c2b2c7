package gitlab

import (
	"container/list"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Bounds of the answers a Client keeps for conditional GETs: following a
// thousand merge requests asks a handful of URLs each, every one of which
// must still be kept when the merge request is next asked about; an answer
// bigger than maxKeptAnswer (a long list, a job log) is not worth the
// memory.
const (
	maxKept       = 8192
	maxKeptBytes  = 48 << 20
	maxKeptAnswer = 1 << 20
)

// kept is a GET's 200 answer as it came, with the ETag GitLab gave it and
// the headers client-go reads of it.
type kept struct {
	url    string
	etag   string
	header map[string]string
	body   []byte
}

// answers keeps the latest answer to each GET by URL, least recently used
// out first. The URL is the whole key: the token travels in a header, so
// a Client with another token for the same instance may take them up.
type answers struct {
	mu    sync.Mutex
	size  int                      // bytes of the bodies kept
	order *list.List               // of *kept, most recently used first
	byURL map[string]*list.Element // into order
}

func (a *answers) get(url string) (kept, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	el, ok := a.byURL[url]
	if !ok {
		return kept{}, false
	}
	a.order.MoveToFront(el)
	return *el.Value.(*kept), true
}

// put keeps k in place of what was kept for its URL; an answer without an
// ETag, or too big, only drops the old one.
func (a *answers) put(k kept) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byURL == nil {
		a.order, a.byURL = list.New(), map[string]*list.Element{}
	}
	if el, ok := a.byURL[k.url]; ok {
		a.remove(el)
	}
	if k.etag == "" || len(k.body) > maxKeptAnswer {
		return
	}
	a.byURL[k.url] = a.order.PushFront(&k)
	a.size += len(k.body)
	for a.order.Len() > maxKept || a.size > maxKeptBytes {
		a.remove(a.order.Back())
	}
}

func (a *answers) drop(url string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if el, ok := a.byURL[url]; ok {
		a.remove(el)
	}
}

func (a *answers) remove(el *list.Element) {
	k := a.order.Remove(el).(*kept)
	delete(a.byURL, k.url)
	a.size -= len(k.body)
}

// keptJSON is a kept answer as Answers writes it.
type keptJSON struct {
	URL    string            `json:"url"`
	ETag   string            `json:"etag"`
	Header map[string]string `json:"header,omitempty"`
	Body   []byte            `json:"body"`
}

// Answers is what the Client keeps for conditional requests, as JSON, most
// recently used first: what KeepAnswers takes up in another process (cadre
// watch --once run by cron), so its requests too are answered 304. The
// Client's secrets are masked in it, as in everything cadre writes.
func (c *Client) Answers() ([]byte, error) {
	a := &c.wire.answers
	a.mu.Lock()
	out := []keptJSON{}
	if a.order != nil {
		for el := a.order.Front(); el != nil; el = el.Next() {
			k := el.Value.(*kept)
			out = append(out, keptJSON{URL: k.url, ETag: k.etag, Header: k.header, Body: []byte(c.scrub(string(k.body)))})
		}
	}
	a.mu.Unlock()
	return json.Marshal(out)
}

// KeepAnswers takes up answers Answers wrote, for URLs of this Client's
// API only; what it keeps already stays. Data it cannot read is refused
// whole.
func (c *Client) KeepAnswers(data []byte) error {
	var in []keptJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("gitlab: kept answers: %w", err)
	}
	prefix := c.base.String() + "/"
	for i := len(in) - 1; i >= 0; i-- {
		k := in[i]
		if !strings.HasPrefix(k.URL, prefix) {
			continue
		}
		if _, ok := c.wire.answers.get(k.URL); ok {
			continue
		}
		c.wire.answers.put(kept{url: k.URL, etag: k.ETag, header: k.Header, body: k.Body})
	}
	return nil
}
