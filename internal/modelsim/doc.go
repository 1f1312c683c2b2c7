// Package modelsim is a scripted model server: it speaks the Anthropic
// Messages, OpenAI Chat Completions and Responses, Gemini and Ollama chat
// APIs (streaming and not) and answers from a Scenario with text and tool
// calls, so real agent CLIs run end to end with no network and no cost.
//
// The server is stateless: the turn a conversation plays is chosen by how
// many assistant turns the request already holds, so the same request
// always gets the same answer. Every request is logged as one JSON line
// (LogEntry) to measure prompt sizes.
//
//	sc, err := modelsim.Load("scenario.yaml")
//	srv, err := modelsim.Start(ctx, "127.0.0.1:0", modelsim.New(sc, os.Stderr))
//	// ANTHROPIC_BASE_URL=srv.URL claude -p ...
package modelsim
