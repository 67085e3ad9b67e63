package gitrepo

import (
	"encoding/json"
)

// taskOf returns the task of commit c's annotation for package full and
// workspace ws, nil when it has none.
func taskOf(c *commitInfo, full, ws string) json.RawMessage {
	for _, a := range c.annotations {
		if a.PackagePath == full && a.WorkspaceName == ws && len(a.Task) > 0 {
			return a.Task
		}
	}
	return nil
}
