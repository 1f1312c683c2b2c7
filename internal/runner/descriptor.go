package runner

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// TypeKind is how a runner type reaches its agent, which decides the settings
// (cadre.yaml runners.NAME) it reads and how `cadre runners check` checks it.
type TypeKind string

// The kinds of runner type.
const (
	// TypeCLI is an agent CLI the user installs: it reads command, args,
	// env and url. It is checked by running `Program --version`.
	TypeCLI TypeKind = "cli"
	// TypeAPI is a model API reached over HTTP: it reads url, model and one
	// env entry, the variable of its API key. It is checked by its Probe.
	TypeAPI TypeKind = "api"
	// TypeExec runs whatever command the settings name: command, args and
	// env; it has no base URL.
	TypeExec TypeKind = "exec"
	// TypeScript plays a scenario file (runners.NAME.scenario) and runs
	// no program.
	TypeScript TypeKind = "script"
)

// Descriptor is what cadre knows of a runner type apart from running it:
// what the configuration's checks, `cadre runners check`, `cadre init` and
// the sandbox read. Each runner package declares its own next to its
// constructor; the fields of the other kinds stay empty.
type Descriptor struct {
	Type string // the type's name in cadre.yaml (runners.NAME.type)
	Kind TypeKind

	// Of an agent CLI (TypeCLI):

	// Caps are what the CLI can do, as each of its runners reports
	// (Runner.Capabilities).
	Caps Caps
	// Program is the CLI run when runners.NAME.command is not set.
	Program string
	// Install is the command that installs Program.
	Install string
	// Env are the variables passed through to the CLI when
	// runners.NAME.env lists none: its credentials and endpoint.
	Env []string
	// URLExample shows how runners.NAME.url is written, for the error of a
	// bad one; empty when the CLI takes no URL from cadre.
	URLExample string
	// SandboxHome are the files and directories, relative to the user's
	// home, that a sandboxed step's fresh home gets: the CLI's settings
	// and login, nothing else of the home.
	SandboxHome []string
	// ModelHosts are the CLI's own model endpoints (URLs), reachable under
	// sandbox network model-only when runners.NAME.url is not set.
	ModelHosts []string

	// Of a model API (TypeAPI):

	// BaseURL is the API's base URL when runners.NAME.url is not set.
	BaseURL string
	// KeyEnv is the variable holding the API key when runners.NAME.env
	// names none; empty for an API that needs no key.
	KeyEnv string
	// KeyRequired says whether a step sent to base fails without a key
	// (the vendor's own endpoint); another server gets the key only when
	// it is set. Nil: no base requires one.
	KeyRequired func(base string) bool
	// Probe is a read-only request that costs nothing and needs the same
	// key as a step (the list of models): the URL to GET at base, and the
	// headers that carry key (none when key is empty).
	Probe func(base, key string) (url string, header http.Header)
}

// NeedsKey says whether a step sent to base fails without the API key.
func (d Descriptor) NeedsKey(base string) bool {
	return d.KeyRequired != nil && d.KeyRequired(base)
}

// Check says what a descriptor lacks for its kind: a CLI its program,
// install command, default variables and sandbox home files; an API its
// base URL and probe. The fields of another kind must stay empty, so a
// fact is never written where nothing reads it.
func (d Descriptor) Check() error {
	var errs []error
	need := func(ok bool, what string) {
		if !ok {
			errs = append(errs, errors.New(what))
		}
	}
	need(d.Type != "", "no type name")
	cli := d.Caps != (Caps{}) || d.Program != "" || d.Install != "" || len(d.Env) > 0 || d.URLExample != "" || len(d.SandboxHome) > 0 || len(d.ModelHosts) > 0
	api := d.BaseURL != "" || d.KeyEnv != "" || d.KeyRequired != nil || d.Probe != nil
	switch d.Kind {
	case TypeCLI:
		need(d.Program != "", "an agent CLI without a program")
		need(d.Install != "", "an agent CLI without an install command")
		need(len(d.Env) > 0, "an agent CLI without the variables it passes through")
		need(len(d.SandboxHome) > 0, "an agent CLI without the home files a sandbox gives it")
		need(!api, "an agent CLI with a model API's fields")
	case TypeAPI:
		u, err := url.Parse(d.BaseURL)
		need(err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "", "a model API without an http(s) base URL")
		need(d.Probe != nil, "a model API without a probe")
		need(!cli, "a model API with an agent CLI's fields")
	case TypeExec, TypeScript:
		need(!cli && !api, "a "+string(d.Kind)+" type with an agent CLI's or a model API's fields")
	default:
		errs = append(errs, fmt.Errorf("kind %q, want %s, %s, %s or %s", d.Kind, TypeCLI, TypeAPI, TypeExec, TypeScript))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("runner type %q: %w", d.Type, err)
	}
	return nil
}
