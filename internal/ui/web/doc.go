// Package web is cadre's dashboard: an HTTP server with one embedded page
// (plain HTML, CSS and JavaScript), a small JSON API over the journal and a
// Server-Sent Events stream that follows the journal's events, so the same
// board works in the process running a run (cadre run --serve), in another
// process (cadre serve) and after the run ended. One board may show
// several repositories, each with its own journal, under keys the server
// makes (a request never names a directory).
//
// Reading is open to whoever reaches the address (127.0.0.1 by default;
// requests naming another host are refused, against DNS rebinding); the
// actions (approve, reject, stop) need the server's token as a bearer
// token. Every text from agents and issues reaches the page as JSON or
// text/plain and is put into the DOM with textContent, never as HTML; a
// Content-Security-Policy forbids inline scripts as a second line.
package web
