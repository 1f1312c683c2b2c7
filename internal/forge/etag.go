package forge

import (
	"container/list"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Bounds of the answers a Client keeps for conditional GETs. Following a
// thousand pull requests asks for four URLs each (checks, statuses,
// reviews, review comments), every one of which must still be kept when
// the pull request is next asked about; an answer bigger than
// maxKeptAnswer (a long list) is not worth the memory.
const (
	maxKept       = 8192
	maxKeptBytes  = 48 << 20
	maxKeptAnswer = 1 << 20
)

// kept is a GET's answer as it came, with the validator GitHub gave it.
type kept struct {
	url  string
	etag string
	link string // the Link header: a 304 need not repeat it
	body []byte
}

// etags keeps the latest answers to GETs by URL, least recently used out
// first, so asking again can send If-None-Match: GitHub answers 304, which
// does not count against the rate limit, when nothing changed.
type etags struct {
	mu    sync.Mutex
	size  int                      // bytes of the bodies kept
	order *list.List               // of *kept, most recently used first
	byURL map[string]*list.Element // into order
}

// get returns the answer kept for url.
func (e *etags) get(url string) (kept, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	el, ok := e.byURL[url]
	if !ok {
		return kept{}, false
	}
	e.order.MoveToFront(el)
	return *el.Value.(*kept), true
}

// put keeps k in place of what was kept for its URL; an answer without an
// ETag, or too big, only drops the old one.
func (e *etags) put(k kept) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byURL == nil {
		e.order, e.byURL = list.New(), map[string]*list.Element{}
	}
	if el, ok := e.byURL[k.url]; ok {
		e.remove(el)
	}
	if k.etag == "" || len(k.body) > maxKeptAnswer {
		return
	}
	e.byURL[k.url] = e.order.PushFront(&k)
	e.size += len(k.body)
	for e.order.Len() > maxKept || e.size > maxKeptBytes {
		e.remove(e.order.Back())
	}
}

func (e *etags) remove(el *list.Element) {
	k := e.order.Remove(el).(*kept)
	delete(e.byURL, k.url)
	e.size -= len(k.body)
}

// keptJSON is a kept answer as Answers writes it.
type keptJSON struct {
	URL  string `json:"url"`
	ETag string `json:"etag"`
	Link string `json:"link,omitempty"`
	Body []byte `json:"body"`
}

// Answers is what the Client keeps for conditional requests, as JSON, most
// recently used first: what KeepAnswers takes up in another process (cadre
// watch --once run by cron), so its requests too are answered 304.
func (c *Client) Answers() ([]byte, error) {
	e := &c.answers
	e.mu.Lock()
	var out []keptJSON
	if e.order != nil {
		for el := e.order.Front(); el != nil; el = el.Next() {
			k := el.Value.(*kept)
			// Written to disk: the Client's secrets stay masked there too.
			out = append(out, keptJSON{URL: k.url, ETag: k.etag, Link: k.link, Body: []byte(c.scrub(string(k.body)))})
		}
	}
	e.mu.Unlock()
	return json.Marshal(out)
}

// KeepAnswers takes up answers Answers wrote, for URLs of this Client's
// API only; what it keeps already stays.
func (c *Client) KeepAnswers(data []byte) error {
	var in []keptJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("kept answers: %w", err)
	}
	prefix := c.base.String() + "/"
	for i := len(in) - 1; i >= 0; i-- {
		k := in[i]
		if !strings.HasPrefix(k.URL, prefix) {
			continue
		}
		if _, ok := c.answers.get(k.URL); ok {
			continue
		}
		c.answers.put(kept{url: k.URL, etag: k.ETag, link: k.Link, body: k.Body})
	}
	return nil
}
