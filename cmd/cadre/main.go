// Command cadre resolves issues and task files with a fleet of AI coding agents.
package main

import (
	"os"

	"github.com/cadre-dev/cadre/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
